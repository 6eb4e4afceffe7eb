/* backends/tcp/probe.h - the transport's probe() for any-source receives (core/p2p.c), for the
 * TCP engine (mesh, ring). */
#ifndef TETHER_TCP_PROBE_H
#define TETHER_TCP_PROBE_H

#include "core/transport.h"

/* The vtable's probe for an endpoint that is the TCP engine itself (see core/transport.h). */
int tether__tcp_op_probe(tether_ep *ep, int peer, tether_tag tag);

#endif
