/* backends/rdma/route.h - ring mode's routes (route.c). */
#ifndef TETHER_RDMA_ROUTE_H
#define TETHER_RDMA_ROUTE_H

#include "rdma_impl.h"

/* Ring mode. The first link towards dst (NULL: none). */
rdma_link *tether__rdma_hop(rdma_ep *ep, int dst);

#endif
