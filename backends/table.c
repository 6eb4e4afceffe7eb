/* backends/table.c - the one file that names every backend; "any" tries them in this order. */
#include "backends/mesh/mesh.h"
#include "backends/rdma/rdma.h"
#include "core/transport.h"

/* A later issue adds ring (after mesh). */
const tether_transport_ops *const tether_backends[] = {&tether_rdma_ops, &tether_mesh_ops, NULL};
