/* backends/tcp/engine_fast.h - the small path on a pair's rings (engine_fast.c). */
#ifndef TETHER_TCP_ENGINE_FAST_H
#define TETHER_TCP_ENGINE_FAST_H

#include "engine_impl.h"

/* Caller holds ep->mu, ep is healthy and peer is linked. Each returns 1 when it moved the whole
 * message, 0 when the general path must (nothing was done). */

/* Write a data frame of len bytes to peer straight into its ring: where its only link has one
 * (shm_tx), nothing waits in its queue, the frame fits the ring's room and needs no descriptor
 * (cma.h). No request: the frame is out. */
int tether__tcp_fast_send(tether__tcp_ep *ep, int peer, const void *buf, size_t len,
                          tether__tag tag);
/* Read the data frame for the receive of tag and len from peer straight from its ring into buf:
 * where the pair's only link reads its ring (shm_rx) between frames, with nothing read ahead or
 * kept unexpected, no receive posted before first (first: the one that was, NULL: none), and
 * the next frame in the ring is that one, whole. Any other frame (a heartbeat, an abort, a
 * mismatch) is left for the general path. */
int tether__tcp_fast_recv(tether__tcp_ep *ep, int peer, void *buf, size_t len, tether__tag tag,
                          const tether__rxmsg *first);

#endif
