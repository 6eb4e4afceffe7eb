/* backends/table.c - the one file that names every backend; "any" tries them in this order. mpi
 * comes first: it is configured only under an MPI launcher, which then owns the job. */
#include "backends/mesh/mesh.h"
#include "backends/mpi/mpi_backend.h"
#include "backends/rdma/rdma.h"
#include "backends/ring/ring.h"
#include "core/transport.h"

const tether_transport_ops *const tether_backends[] = {&tether_mpi_ops, &tether_rdma_ops,
                                                       &tether_mesh_ops, &tether_ring_ops, NULL};

/* MLX's names for its JACCL, which the rdma backend runs: "jaccl" its mesh of RDMA links, and
 * "jaccl-ring" its ring of them. */
const tether_backend_alias tether_backend_aliases[] = {
    {"jaccl", "rdma"},
    {"jaccl-ring", "rdma"},
    {NULL, NULL},
};
