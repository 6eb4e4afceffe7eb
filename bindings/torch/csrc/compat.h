/* bindings/torch/csrc/compat.h - the one place that knows which PyTorch it is built against.
 *
 * torch 1.x: a third-party backend subclasses c10d::ProcessGroup and its creator returns one.
 * torch 2.x: it subclasses c10d::Backend; torch wraps it in a ProcessGroup itself. The collective
 * signatures (vectors of tensors, *Options, c10d::Work) are the same in both, so the rest of the
 * extension names only TetherBase. */
#pragma once

#include <chrono>

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

} // namespace tether_torch
