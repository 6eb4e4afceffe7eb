/* bindings/torch/csrc/staging.h - accelerator tensors (CUDA, MPS) staged through host memory.
 *
 * tether moves host memory, so a call on device tensors runs on host twins, as gloo does for CUDA:
 * each twin is filled at the call, on the tensor's current stream (after the work already queued
 * there, without waiting for it), the progress thread waits for those copies before the
 * collective, and copies the results back before the Work completes, so wait() returning means
 * the device tensors hold them. CUDA twins are pinned, from torch's caching host allocator (blocks
 * are reused from call to call); other accelerators (MPS: unified memory) get plain host memory.
 * CPU tensors are their own twins and cost nothing here. */
#pragma once

#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/Event.h>

namespace tether_torch
{

class Staging
{
  public:
    /* The tensor the collective uses for t: t on the CPU, else its host twin, filled from t now
     * when the collective reads it, copied back into t by finish() when it writes it. */
    at::Tensor in(const at::Tensor &t);
    at::Tensor out(const at::Tensor &t);
    at::Tensor inout(const at::Tensor &t);
    std::vector<at::Tensor> in(const std::vector<at::Tensor> &ts);
    std::vector<at::Tensor> out(const std::vector<at::Tensor> &ts);
    std::vector<at::Tensor> inout(const std::vector<at::Tensor> &ts);

    /* Progress thread, before the collective: blocks until the copies into the twins are done. */
    void ready() const;
    /* Progress thread, after a successful collective: the written twins back into their tensors
     * (blocking: done when this returns). */
    void finish() const;

  private:
    at::Tensor twin(const at::Tensor &t, bool read, bool written);
    std::vector<at::Tensor> twins(const std::vector<at::Tensor> &ts, bool read, bool written);

    struct Written {
        at::Tensor device, host;
    };
    std::vector<Written> written_;
    std::unique_ptr<c10::Event> filled_; /* recorded after the last copy into a twin */
};

} // namespace tether_torch
