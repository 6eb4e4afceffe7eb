/* backends/tcp/engine_core.h - the engine's core (engine.c): queueing sends, the helpers' answers,
 * requests. */
#ifndef TETHER_TCP_ENGINE_CORE_H
#define TETHER_TCP_ENGINE_CORE_H

#include "engine_impl.h"

/* Queue t on l (a chunk passing through before this rank's own frames not yet begun) and write
 * what the socket takes at once when l was idle. Caller holds ep->mu. */
int tether__tcp_tx_queue(tether__tcp_ep *ep, tether__link *l, tether__txmsg *t);
/* Queue a frame l owns (no request) with n payload bytes copied after it. */
int tether__tcp_tx_owned(tether__tcp_ep *ep, tether__link *l, const tether__frame *f,
                         const void *payload, size_t n);

/* What the memory path (cma.h) returned, applied to l: a failure breaks ep. */
int tether__tcp_apply(tether__tcp_ep *ep, tether__link *l, tether__cma_todo *t);
/* Where the memory path's calls about l stand. */
tether__cma_at tether__tcp_cma_at(tether__tcp_ep *ep, const tether__link *l);

/* The link a message to or from peer travels on first. */
tether__link *tether__tcp_hop(tether__tcp_ep *ep, int peer);

/* Free a request (any thread's, caller holds ep->mu). */
void tether__tcp_req_free(tether__tcp_ep *ep, struct tether__req *r);

#endif
