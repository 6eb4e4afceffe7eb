/* bindings/torch/csrc/module.cpp - the Python module tether_torch._C: the functions that make
 * process groups (the world, subgroups). Registration with torch.distributed happens in
 * tether_torch/__init__.py. */
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
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
    m.def(
        "create_subgroup",
        [](std::vector<int> world_ranks, int rank,
           std::chrono::milliseconds timeout) -> c10::intrusive_ptr<tether_torch::TetherBase> {
            return c10::make_intrusive<tether_torch::ProcessGroupTether>(world_ranks, rank,
                                                                         timeout);
        },
        py::arg("world_ranks"), py::arg("rank"), py::arg("timeout"),
        py::call_guard<py::gil_scoped_release>(),
        "A subgroup of this process's tether world: the world ranks listed, this process being "
        "rank (waits for every listed rank).");
    m.def("world_backend", &tether_torch::ProcessGroupTether::world_backend,
          "The transport of this process's tether world (\"mesh\", \"mpi\", ...), \"\" while "
          "it has none.");
    m.def("world_rank", &tether_torch::ProcessGroupTether::world_rank,
          "This process's rank in its tether world, -1 while it has none.");
}
