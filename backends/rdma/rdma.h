/* backends/rdma/rdma.h - the RDMA backend's one export, for backends/table.c. */
#ifndef TETHER_RDMA_H
#define TETHER_RDMA_H

#include "core/transport.h"

extern const tether_transport_ops tether_rdma_ops;

#endif
