/* backends/tcp/probe.h - the transport's probe() for any-source receives (core/p2p.c), for the
 * TCP engine (mesh, ring), and the queue lookup the RDMA backend's probe shares. */
#ifndef TETHER_TCP_PROBE_H
#define TETHER_TCP_PROBE_H

#include "core/transport.h"
#include "frame.h"

/* 1 if q holds a message with tag's group, seq and step (whatever its sig), else 0. */
int tether__rxq_holds(const tether__rxq *q, tether_tag tag);

/* The vtable's probe for an endpoint that is the TCP engine itself (see core/transport.h). */
int tether__tcp_op_probe(tether_ep *ep, int peer, tether_tag tag);

#endif
