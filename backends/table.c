/* backends/table.c - the one file that names every backend; "any" tries them in this order. mpi
 * comes first: it is configured only under an MPI launcher, which then owns the job. */
#include "backends/mesh/mesh.h"
#include "backends/mpi/mpi_backend.h"
#include "backends/rdma/rdma.h"
#include "backends/ring/ring.h"
#include "core/transport.h"

const tether__transport_ops *const tether__backends[] = {
    &tether__mpi_ops, &tether__rdma_ops, &tether__mesh_ops, &tether__ring_ops, NULL};

/* MLX's names for its JACCL, which the rdma backend runs: "jaccl" its mesh of RDMA links, and
 * "jaccl-ring" its ring of them. */
const tether__backend_alias tether__backend_aliases[] = {
    {"jaccl", "rdma"},
    {"jaccl-ring", "rdma"},
    {NULL, NULL},
};
