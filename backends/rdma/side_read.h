/* backends/rdma/side_read.h - what comes in on a side channel (side_read.c). */
#ifndef TETHER_RDMA_SIDE_READ_H
#define TETHER_RDMA_SIDE_READ_H

#include "rdma_impl.h"

/* Take in what peer's side channel holds (never blocks). */
int tether__rdma_side_read(rdma_ep *ep, rdma_peer *pe, int peer);

#endif
