/* backends/tcp/engine_break.h - breaking an endpoint (engine_break.c). */
#ifndef TETHER_TCP_ENGINE_BREAK_H
#define TETHER_TCP_ENGINE_BREAK_H

#include "engine_impl.h"

/* Break ep (first failure wins): record code and the message, fail every request, forget every
 * queued frame so nothing touches a user buffer again (a half-sent one's tail is copied and kept,
 * so an abort frame can follow it). Returns code. Caller holds ep->mu. */
int tether__tcp_break(tether__tcp_ep *ep, int code, const char *fmt, ...) TETHER__PRINTF(3, 4);
/* EPEER for a message to or from a peer that closed normally. Caller holds ep->mu. */
int tether__tcp_gone(tether__tcp_ep *ep, const tether__link *l, const char *what);
/* ENET for a malformed frame from l's peer (what says how). Caller holds ep->mu. */
int tether__tcp_protocol_error(tether__tcp_ep *ep, const tether__link *l, const char *what);
/* The sticky error, recorded for the calling thread's public call. */
int tether__tcp_sticky(const tether__tcp_ep *ep);

/* Forget what a link holds (a break, or close). l's queued frames (request parts belong to their
 * requests, the rest to l); the frames from t on. */
void tether__tcp_tx_clear(tether__link *l);
void tether__tcp_tx_forget(tether__txmsg *t);
/* Forget what l kept as a lane (engine_kept.c: requests fail, buffers are the program's again),
 * and its tunnel. */
void tether__tcp_lane_clear(tether__link *l);
/* Forget l's receive side: the frame being read, its posted and unexpected receives, read-ahead. */
void tether__tcp_rx_clear(tether__tcp_ep *ep, tether__link *l);
/* Forget the sends left in memory on every link; bump the epoch when there were any (cma.h). */
void tether__tcp_cma_withdraw(tether__tcp_ep *ep);

#endif
