/* backends/tcp/engine_rx.h - the engine's receive side (engine_rx.c). */
#ifndef TETHER_TCP_ENGINE_RX_H
#define TETHER_TCP_ENGINE_RX_H

#include "engine_impl.h"

/* 1 on an endpoint's progress thread (engine_wait.c), 0 on the program's threads. */
extern _Thread_local int tether__tcp_loop_thread;

/* Caller holds ep->mu.
 * tether__tcp_read reads what l's socket holds. With all = 0 it stops once no receive is posted on
 * l and no frame is half read: bytes nobody asked for yet stay in the socket, where TCP's flow
 * control holds back the sender, and are read later straight into the receive that claims them.
 * Reading them at once instead meant a heap copy per frame, and a rank that kept draining the next
 * collective's frames before posting its own sends serialised the exchange (docs/perf/analysis.md).
 * all = 1 drains the socket: a hang-up must surface as the peer's error. An endpoint with a
 * progress thread always drains (the thread must pass routed frames on, and it sees only the
 * socket, not frames left in rbuf). */
int tether__tcp_read(tether__tcp_ep *ep, tether__link *l, int all);
/* The poll events wait() asks of l, and what to do with what poll() said of it (caller holds
 * ep->mu). A link whose bytes nobody wants yet is still polled until input shows up on it, so that
 * a peer that exits is noticed while we wait on another; a peek then tells a closed connection
 * (read, to report it) from bytes that wait for their receive (held: not polled for input until
 * read; on Linux POLLRDHUP still reports the peer's exit meanwhile). */
short tether__tcp_poll_events(const tether__link *l);
int tether__tcp_input_ready(tether__tcp_ep *ep, tether__link *l, short revents);
/* The same for a link still negotiating as the endpoint opens: its frames up to the end of the
 * exchange only, even where the peer has hung up since. A peer that finished opening first may
 * have aborted or closed already, and that news belongs to the first call, as it would had this
 * rank been quicker; a stream that ends before the exchange does still breaks opening (the read
 * meets its end while it wants input). */
int tether__tcp_opening_input(tether__tcp_ep *ep, tether__link *l, short revents);
/* The same for the progress thread, which reads every link but those held back (TETHER__PASS_MAX:
 * polled only for a hang-up, which is then read at once). */
short tether__tcp_loop_events(tether__tcp_ep *ep, const tether__link *l);
void tether__tcp_loop_input(tether__tcp_ep *ep, tether__link *l, short revents);
/* Payload bytes of the frame being read on l (l->cur) still to come. */
uint64_t tether__tcp_payload_left(const tether__link *l);
int tether__tcp_post_recv(tether__tcp_ep *ep, tether__link *l, struct tether__req *r,
                          tether__rxmsg *part);
int tether__tcp_mismatch(tether__tcp_ep *ep, const tether__link *l, tether__tag got_tag,
                         uint64_t got_len, tether__tag want, uint64_t want_len);
/* A stale message (core/passed.h) arrived (tag from l's peer) or is kept: EMISMATCH. */
int tether__tcp_stale(tether__tcp_ep *ep, const tether__link *l, tether__tag tag);
/* Look again at the messages kept unexpected, once some call is over since the last look. */
int tether__tcp_sweep_stale(tether__tcp_ep *ep);
/* l's peer announced len bytes no receive claims, more than tether__rxcache_admits: ENET. */
int tether__tcp_too_long(tether__tcp_ep *ep, const tether__link *l, uint64_t len, tether__tag tag);
/* Queue a leave notice of origin to neighbour to (route.h). Caller holds ep->mu. */
int tether__tcp_queue_leave(tether__tcp_ep *ep, int to, int origin);

#endif
