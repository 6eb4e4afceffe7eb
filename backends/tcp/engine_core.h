/* backends/tcp/engine_core.h - the engine's core (engine.c): errors, the send side, requests. */
#ifndef TETHER_TCP_ENGINE_CORE_H
#define TETHER_TCP_ENGINE_CORE_H

#include "engine_impl.h"

/* Break ep (first failure wins): record code and the message, fail every request, forget every
 * queued frame so nothing touches a user buffer again (a half-sent one's tail is copied and kept,
 * so an abort frame can follow it). Returns code. Caller holds ep->mu. */
int tether__tcp_break(tether__tcp_ep *ep, int code, const char *fmt, ...) TETHER__PRINTF(3, 4);

/* EPEER for a message to or from a peer that closed normally. Caller holds ep->mu. */
int tether__tcp_gone(tether__tcp_ep *ep, const tether__link *l, const char *what);

/* The sticky error, recorded for the calling thread's public call. */
int tether__tcp_sticky(const tether__tcp_ep *ep);

/* Write what l's socket takes of its queue; a failure breaks ep. Caller holds ep->mu. */
int tether__tcp_flush(tether__tcp_ep *ep, tether__link *l);
/* The same without breaking ep: 0, or the errno (heartbeats and control frames). */
int tether__tcp_tx_flush(tether__tcp_ep *ep, tether__link *l);

/* Wake the progress thread to watch l's socket for room: its queue did not fit. Not while the
 * thread stands by (the program's threads flush it; the thread looks again within
 * TETHER__LOOP_STANDBY_MS): large sends fill the socket every time, and a wake-up each cost the
 * ring a fifth of its time at 4 MiB. Caller holds ep->mu. */
void tether__tcp_kick_for_room(tether__tcp_ep *ep, const tether__link *l);
/* Append t to l's queue, writing nothing. */
void tether__tcp_tx_push(tether__link *l, tether__txmsg *t);
/* Queue t on l (a chunk passing through before this rank's own frames not yet begun) and write
 * what the socket takes at once when l was idle. Caller holds ep->mu. */
int tether__tcp_tx_queue(tether__tcp_ep *ep, tether__link *l, tether__txmsg *t);
/* Queue a frame l owns (no request) with n payload bytes copied after it. */
int tether__tcp_tx_owned(tether__tcp_ep *ep, tether__link *l, const tether__frame *f,
                         const void *payload, size_t n);
/* Forget l's queued frames (request parts belong to their requests, the rest to l), and l's
 * heartbeat frames only. */
void tether__tcp_tx_clear(tether__link *l);
void tether__tcp_tx_forget(tether__txmsg *t);
void tether__tcp_tx_drop_beats(tether__link *l);

/* Forget the sends left in memory on every link; bump the epoch when there were any (cma.h). */
void tether__tcp_cma_withdraw(tether__tcp_ep *ep);

/* What the memory path (cma.h) returned, applied to l: a failure breaks ep. */
int tether__tcp_apply(tether__tcp_ep *ep, tether__link *l, tether__cma_todo *t);
/* Where the memory path's calls about l stand. */
tether__cma_at tether__tcp_cma_at(tether__tcp_ep *ep, const tether__link *l);

/* The link a message to or from peer travels on first. */
tether__link *tether__tcp_hop(tether__tcp_ep *ep, int peer);

/* Free a request (any thread's, caller holds ep->mu). */
void tether__tcp_req_free(tether__tcp_ep *ep, struct tether__req *r);

#endif
