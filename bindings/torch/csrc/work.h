/* bindings/torch/csrc/work.h - the Work a tether call returns: completed once, by the progress
 * thread.
 *
 * Completion sets the future first (DDP chains its bucket hooks on it and reads the tensors it
 * holds), then wakes wait(). wait() without a timeout still gives up after the process group's
 * timeout, so no caller can block forever even if the queue ahead of it is long. */
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>

#include "compat.h"

namespace tether_torch
{

class TetherWork final : public c10d::Work
{
  public:
    TetherWork(int rank, c10d::OpType type, const char *call, std::vector<at::Tensor> outputs,
               std::chrono::milliseconds timeout)
        : c10d::Work(rank, type), call_(call), outputs_(std::move(outputs)), timeout_(timeout),
          future_(c10::make_intrusive<c10::ivalue::Future>(
              c10::ListType::create(c10::TensorType::get())))
    {
    }

    /* Progress thread only, exactly once. */
    void complete(std::exception_ptr error)
    {
        if (error)
            future_->setError(error);
        else
            future_->markCompleted(c10::IValue(outputs_));
        finish(error);
    }

    bool wait(std::chrono::milliseconds timeout) override
    {
        const auto limit = timeout == kWaitForever ? timeout_ : timeout;
        std::unique_lock<std::mutex> lock(mutex_);
        if (!cv_.wait_for(lock, limit, [this] { return completed_; }))
            throw std::runtime_error("tether " + call_ + ": not finished after " +
                                     std::to_string(limit.count()) +
                                     " ms (Work.wait timeout; the process group's timeout when "
                                     "none is given)");
        if (exception_)
            std::rethrow_exception(exception_);
        return true;
    }

    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override
    {
        return future_;
    }
    std::vector<at::Tensor> result() override
    {
        return outputs_;
    }

    /* A receive's sender, once it completed (torch's recv with src=None reads it); the progress
     * thread sets it before complete(). */
    void set_source(int rank)
    {
        source_ = rank;
    }
    int sourceRank() const override
    {
        const int rank = source_;
        return rank >= 0 ? rank : c10d::Work::sourceRank(); /* not a completed receive: throws */
    }

  private:
    const std::string call_;
    const std::vector<at::Tensor> outputs_;
    const std::chrono::milliseconds timeout_;
    const c10::intrusive_ptr<c10::ivalue::Future> future_;
    std::atomic<int> source_{-1};
};

} // namespace tether_torch
