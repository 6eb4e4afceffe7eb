/* bindings/torch/csrc/module.cpp - the Python module tether_torch._C: one function that makes the
 * process group. Registration with torch.distributed happens in tether_torch/__init__.py. */
#include <pybind11/chrono.h>
#include <torch/python.h>

#include "process_group.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m)
{
    m.doc() = "tether's torch.distributed backend (use: import tether_torch)";
    m.def(
        "create_process_group",
        [](int rank, int size,
           std::chrono::milliseconds timeout) -> c10::intrusive_ptr<tether_torch::TetherBase> {
            return c10::make_intrusive<tether_torch::ProcessGroupTether>(rank, size, timeout);
        },
        py::arg("rank"), py::arg("size"), py::arg("timeout"),
        /* Forming the group waits for every rank: let other Python threads run meanwhile. */
        py::call_guard<py::gil_scoped_release>(),
        "The tether world as a process group (tether_init(\"any\", strict=1); singleton alone).");
}
