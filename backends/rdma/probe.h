/* backends/rdma/probe.h - the vtable's probe (probe.c). */
#ifndef TETHER_RDMA_PROBE_H
#define TETHER_RDMA_PROBE_H

#include "rdma_impl.h"

/* The vtable's probe (core/transport.h). */
int tether__rdma_probe(tether__ep *ep, int peer, tether__tag tag);

#endif
