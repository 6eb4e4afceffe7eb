/* backends/tcp/engine_lane.h - the lanes of pairs with several links (engine_lane.c). */
#ifndef TETHER_TCP_ENGINE_LANE_H
#define TETHER_TCP_ENGINE_LANE_H

#include "engine_impl.h"

/* Caller holds ep->mu. */

/* Write what l's socket takes of its queue, then, on a pair with several links, move its tunnels.
 * A failure takes l's lane out (another lane of its pair carries its stream), else breaks ep. */
int tether__tcp_flush(tether__tcp_ep *ep, tether__link *l);
/* The same without either: 0, or the errno (heartbeats and control frames). */
int tether__tcp_tx_flush(tether__tcp_ep *ep, tether__link *l);

/* The parser consumed bytes of l's stream: ack what asks for it. */
void tether__tcp_lane_consumed(tether__tcp_ep *ep, tether__link *l);
/* Queue an ack of l's position when it moved since the last (the heartbeats, once a period). */
void tether__tcp_lane_ack(tether__tcp_ep *ep, tether__link *l);
/* l's connection failed (why): carry its stream through another lane of its pair. 0 when taken
 * out, -1 when no other lane is left (the caller fails as before). */
int tether__tcp_lane_down(tether__tcp_ep *ep, tether__link *l, const char *why);
/* An ack, failover or tunnel frame's header arrived on l. */
int tether__tcp_lane_frame(tether__tcp_ep *ep, tether__link *l, const tether__frame *f);
/* A tunnel frame's payload m arrived on l: feed it to its lane. */
int tether__tcp_lane_tunnelled(tether__tcp_ep *ep, tether__link *l, tether__rxmsg *m);
/* After l was written or read: move the tunnels it takes part in. */
int tether__tcp_lane_move(tether__tcp_ep *ep, tether__link *l);
/* The heartbeats' look: a lane silent while another of its pair carries is taken out. */
void tether__tcp_lane_watch(tether__tcp_ep *ep, int64_t now_ms);
/* A new socket fd for lane l, dialled or accepted again (engine_rejoin.c): l switches back to it
 * (a lane still direct is taken out first), its stream moving from the tunnel to fd at the
 * position the peer's switch frame names. fd is l's from now on. */
void tether__tcp_lane_back(tether__tcp_ep *ep, tether__link *l, int fd);

#endif
