/* backends/tcp/engine_kept.h - what a lane's sender keeps until acknowledged (engine_kept.c). */
#ifndef TETHER_TCP_ENGINE_KEPT_H
#define TETHER_TCP_ENGINE_KEPT_H

#include "engine_impl.h"

/* Caller holds ep->mu. */

/* l's frame t was written whole: keep it until the peer acknowledges it. */
void tether__tcp_lane_keep(tether__tcp_ep *ep, tether__link *l, tether__txmsg *t);
/* The peer consumed l's stream up to pos: what l kept before is done. */
int tether__tcp_lane_acked(tether__tcp_ep *ep, tether__link *l, uint64_t pos);
/* Make l's stream start again at pos, which the peer consumed: what l kept, then its queue, the
 * first frame from where pos falls in it. -1 when pos is not in what l kept or queued. */
int tether__tcp_lane_rewind(tether__link *l, uint64_t pos);

#endif
