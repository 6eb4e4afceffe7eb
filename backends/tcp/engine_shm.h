/* backends/tcp/engine_shm.h - the rings of pairs on one host (engine_shm.c). */
#ifndef TETHER_TCP_ENGINE_SHM_H
#define TETHER_TCP_ENGINE_SHM_H

#include "engine_impl.h"

/* Caller holds ep->mu. It calls nothing of the engine's halves: it says what to send or report,
 * as cma.h does. */

/* At creation: the lower rank of every pair with one link offers a segment (an empty offer where
 * the peer is on another host or the rings are off), and both sides wait for the exchange. 1 when
 * f is an offer to send on l. */
int tether__tcp_shm_offer(tether__tcp_ep *ep, tether__link *l, tether__frame *f);
/* What an offer or switch frame that arrived on l asks of the engine. */
typedef enum {
    TETHER__SHM_NOTHING,
    TETHER__SHM_SWITCH,  /* queue our switch frame (code 1): our frames go on in the ring */
    TETHER__SHM_DECLINE, /* queue a declining answer (code 0) */
    TETHER__SHM_BAD,     /* the peer broke the exchange: a protocol error, *bad says what */
} tether__shm_step;
tether__shm_step tether__tcp_shm_frame(tether__tcp_ep *ep, tether__link *l, const tether__frame *f,
                                       const char **bad);
/* Write iov into l's ring (l->shm_tx): the bytes taken, ringing the peer if it sleeps. */
size_t tether__tcp_shm_send(tether__link *l, const struct iovec *iov, int n);
/* Read up to want bytes of l's ring (l->shm_rx): as recv() answers, 0 once the ring is empty and
 * the socket ended; -1 with errno EAGAIN when empty, EPROTO when the peer's indices are corrupt. */
long tether__tcp_shm_recv(tether__link *l, void *dst, size_t want);
/* A frame's header and payload of len bytes into l's ring (l->shm_tx), which has room for them,
 * ringing the peer if it sleeps. */
void tether__tcp_shm_put_frame(tether__link *l, const unsigned char *hdr, const void *p,
                               size_t len);
/* tether__shm_take_frame on l's ring (l->shm_rx), ringing the peer if it sleeps: 1 when the next
 * frame had header hdr and its n bytes of payload are in dst, else 0 (nothing consumed). */
int tether__tcp_shm_take_frame(tether__link *l, const unsigned char *hdr, void *dst, size_t n);
/* Our switch frame went out: the doorbell owed meanwhile, if any. */
void tether__tcp_shm_switched(tether__link *l);
/* Read the doorbells on l's socket (l->shm_rx), noting its end in l->sock_eof. */
void tether__tcp_shm_bells(tether__link *l);
/* The poll() events of a ring's directions: input (in: a receive wants bytes, or they are not
 * held; the socket's end always) and room (frames wait). A direction with bytes or room already
 * asks POLLOUT, which a socket always has, so that poll() returns at once. */
short tether__tcp_shm_events(const tether__link *l, int in);
/* Bytes waiting to be read on l, and bytes written on it the peer has not read: the socket's or
 * the ring's, per direction. */
void tether__tcp_queued(const tether__link *l, size_t *in, size_t *out);

#endif
