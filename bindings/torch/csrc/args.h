/* bindings/torch/csrc/args.h - checks made when a call is made, before anything is queued, and the
 * torch-to-tether conversions (dtype, reduction). Each failure raises ValueError naming the call.
 */
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "compat.h"
#include "tether.h"

namespace tether_torch
{

[[noreturn]] inline void bad_arg(const char *call, const std::string &what)
{
    throw std::invalid_argument(std::string("tether ") + call + ": " + what);
}

/* tether's dtype for t's scalar type; types tether has no kernels for are refused. */
inline tether_dtype dtype_of(const at::Tensor &t, const char *call)
{
    switch (t.scalar_type()) {
    case at::kBool:
        return TETHER_BOOL;
    case at::kChar:
        return TETHER_INT8;
    case at::kByte:
        return TETHER_UINT8;
    case at::kShort:
        return TETHER_INT16;
    case at::kInt:
        return TETHER_INT32;
    case at::kLong:
        return TETHER_INT64;
    case at::kHalf:
        return TETHER_FLOAT16;
    case at::kBFloat16:
        return TETHER_BFLOAT16;
    case at::kFloat:
        return TETHER_FLOAT32;
    case at::kDouble:
        return TETHER_FLOAT64;
    case at::kComplexFloat:
        return TETHER_COMPLEX64;
    default:
        bad_arg(call, std::string("dtype ") + c10::toString(t.scalar_type()) +
                          " is not supported (bool, int8, uint8, int16, int32, int64, float16, "
                          "bfloat16, float32, float64, complex64 are)");
    }
}

/* A dense tensor of a supported dtype on the CPU, or on CUDA or MPS (staged through host memory,
 * staging.h); returns that dtype. */
inline tether_dtype check_tensor(const at::Tensor &t, const char *call)
{
    if (!t.defined())
        bad_arg(call, "undefined tensor");
    if (!t.device().is_cpu() && !t.device().is_cuda() && !t.device().is_mps())
        bad_arg(call,
                "tensor on " + t.device().str() + ": tether moves CPU, CUDA and MPS tensors only");
    if (t.layout() != at::kStrided)
        bad_arg(call, "sparse tensors are not supported");
    return dtype_of(t, call);
}

/* t has like's dtype, and its element count when same_numel. */
inline void check_like(const at::Tensor &t, const at::Tensor &like, bool same_numel,
                       const char *call)
{
    check_tensor(t, call);
    if (t.device() != like.device())
        bad_arg(call, "tensors on different devices in one call: " + t.device().str() + " and " +
                          like.device().str());
    if (t.scalar_type() != like.scalar_type())
        bad_arg(call, std::string("tensors of different dtypes in one call: ") +
                          c10::toString(t.scalar_type()) + " and " +
                          c10::toString(like.scalar_type()));
    if (same_numel && t.numel() != like.numel())
        bad_arg(call, "tensors of different sizes in one call: " + std::to_string(t.numel()) +
                          " and " + std::to_string(like.numel()) + " elements");
}

/* A non-empty list whose tensors are all like the first; returns their dtype. */
inline tether_dtype check_list(const std::vector<at::Tensor> &ts, bool same_numel, const char *call)
{
    if (ts.empty())
        bad_arg(call, "empty tensor list");
    const tether_dtype dt = check_tensor(ts[0], call);
    for (const auto &t : ts)
        check_like(t, ts[0], same_numel, call);
    return dt;
}

/* The one tensor of a per-device list (CPU: one device, one tensor). */
inline const at::Tensor &single(const std::vector<at::Tensor> &ts, const char *call)
{
    if (ts.size() != 1)
        bad_arg(call, "expected 1 tensor, got " + std::to_string(ts.size()));
    check_tensor(ts[0], call);
    return ts[0];
}

/* A list of exactly n tensors (one per rank). */
inline void check_count(const std::vector<at::Tensor> &ts, size_t n, const char *call)
{
    if (ts.size() != n)
        bad_arg(call, "expected " + std::to_string(n) + " tensors (one per rank), got " +
                          std::to_string(ts.size()));
}

struct Reduction {
    tether_op op;
    bool average; /* AVG: a SUM, then divided by the group size */
};

inline Reduction reduction_of(const c10d::ReduceOp &op, const at::Tensor &t, const char *call)
{
    const bool ordered = !at::isComplexType(t.scalar_type());
    switch (op.op_) {
    case c10d::ReduceOp::SUM:
        return {TETHER_SUM, false};
    case c10d::ReduceOp::PRODUCT:
        return {TETHER_PROD, false};
    case c10d::ReduceOp::MIN:
    case c10d::ReduceOp::MAX:
        if (!ordered)
            bad_arg(call, "MIN and MAX are not defined on complex tensors");
        return {op.op_ == c10d::ReduceOp::MIN ? TETHER_MIN : TETHER_MAX, false};
    case c10d::ReduceOp::AVG:
        if (!at::isFloatingType(t.scalar_type()) && !at::isComplexType(t.scalar_type()))
            bad_arg(call, "AVG needs a floating-point or complex tensor");
        return {TETHER_SUM, true};
    default:
        bad_arg(call, "reduce op " + std::to_string(static_cast<int>(op.op_)) +
                          " is not supported (SUM, PRODUCT, MIN, MAX, AVG are)");
    }
}

} // namespace tether_torch
