/* backends/tcp/engine_lane.h - the lanes of pairs with several links (engine_lane.c). */
#ifndef TETHER_TCP_ENGINE_LANE_H
#define TETHER_TCP_ENGINE_LANE_H

#include "engine_impl.h"

/* Caller holds ep->mu. */

/* l's frame t was written whole: keep it until the peer acknowledges it. */
void tether__tcp_lane_keep(tether__tcp_ep *ep, tether__link *l, tether__txmsg *t);
/* The parser consumed bytes of l's stream: ack what asks for it. */
void tether__tcp_lane_consumed(tether__tcp_ep *ep, tether__link *l);
/* Queue an ack of l's position when it moved since the last (the heartbeats, once a period). */
void tether__tcp_lane_ack(tether__tcp_ep *ep, tether__link *l);
/* Forget what l kept (a break or close: requests fail, buffers are the program's again). */
void tether__tcp_lane_clear(tether__link *l);
/* l's connection failed (why): carry its stream through another lane of its pair. 0 when taken
 * out, -1 when no other lane is left (the caller fails as before). */
int tether__tcp_lane_down(tether__tcp_ep *ep, tether__link *l, const char *why);
/* Make l's stream start again at pos, which the peer consumed: what l kept, then its queue, the
 * first frame from where pos falls in it. -1 when pos is not in what l kept or queued. */
int tether__tcp_lane_rewind(tether__link *l, uint64_t pos);
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
