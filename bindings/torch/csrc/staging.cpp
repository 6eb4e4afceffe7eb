/* bindings/torch/csrc/staging.cpp - host twins of accelerator tensors (see staging.h). */
#include "staging.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "compat.h"

namespace tether_torch
{

at::Tensor Staging::twin(const at::Tensor &t, bool read, bool written)
{
    if (t.device().is_cpu())
        return t;
    const at::Tensor host =
        at::empty(t.sizes(), t.options().device(at::kCPU).pinned_memory(t.device().is_cuda()));
    if (read) {
        /* Queued on t's current stream: runs after what the caller queued there before. */
        host.copy_(t, /*non_blocking=*/true);
        const c10::Device dev = t.device();
        if (!filled_)
            filled_ = std::make_unique<c10::Event>(dev.type());
        filled_->record(c10::impl::getDeviceGuardImpl(dev.type())->getStream(dev));
    }
    if (written)
        written_.push_back({t, host});
    return host;
}

at::Tensor Staging::in(const at::Tensor &t)
{
    return twin(t, true, false);
}

at::Tensor Staging::out(const at::Tensor &t)
{
    return twin(t, false, true);
}

at::Tensor Staging::inout(const at::Tensor &t)
{
    return twin(t, true, true);
}

std::vector<at::Tensor> Staging::twins(const std::vector<at::Tensor> &ts, bool read, bool written)
{
    std::vector<at::Tensor> hs;
    hs.reserve(ts.size());
    for (const auto &t : ts)
        hs.push_back(twin(t, read, written));
    return hs;
}

std::vector<at::Tensor> Staging::in(const std::vector<at::Tensor> &ts)
{
    return twins(ts, true, false);
}

std::vector<at::Tensor> Staging::out(const std::vector<at::Tensor> &ts)
{
    return twins(ts, false, true);
}

std::vector<at::Tensor> Staging::inout(const std::vector<at::Tensor> &ts)
{
    return twins(ts, true, true);
}

void Staging::ready() const
{
    if (filled_)
        wait_for_event(*filled_);
}

void Staging::finish() const
{
    for (const auto &w : written_)
        w.device.copy_(w.host); /* from host memory, blocking: complete on return */
}

} // namespace tether_torch
