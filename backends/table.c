/* backends/table.c - the one file that names every backend; "any" tries them in this order. */
#include "backends/mesh/mesh.h"
#include "backends/rdma/rdma.h"
#include "backends/ring/ring.h"
#include "core/transport.h"

const tether_transport_ops *const tether_backends[] = {&tether_rdma_ops, &tether_mesh_ops,
                                                       &tether_ring_ops, NULL};
