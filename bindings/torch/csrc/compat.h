/* bindings/torch/csrc/compat.h - the one place that knows which PyTorch it is built against.
 *
 * torch 1.x: a third-party backend subclasses c10d::ProcessGroup and its creator returns one.
 * torch 2.x: it subclasses c10d::Backend; torch wraps it in a ProcessGroup itself. The collective
 * signatures (vectors of tensors, *Options, c10d::Work) are the same in both, so the rest of the
 * extension names only TetherBase. */
#pragma once

#include <chrono>
#include <thread>

#include <c10/core/Event.h>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

namespace tether_torch
{

#if TORCH_VERSION_MAJOR >= 2
using TetherBase = c10d::Backend;
#else
using TetherBase = c10d::ProcessGroup;
#endif

/* Work.wait()'s "no timeout" value: a global in both versions, named here once. */
constexpr std::chrono::milliseconds kWaitForever = kNoTimeout;

/* Blocks this thread until the work recorded in e has run on its device. torch 1.x's Event has no
 * synchronize(): poll it. */
inline void wait_for_event(const c10::Event &e)
{
#if TORCH_VERSION_MAJOR >= 2
    e.synchronize();
#else
    while (!e.query())
        std::this_thread::sleep_for(std::chrono::microseconds(50));
#endif
}

} // namespace tether_torch
