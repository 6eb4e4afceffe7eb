/* backends/rdma/heartbeat.h - the heartbeats on the side channels and the alive() check
 * (heartbeat.c). */
#ifndef TETHER_RDMA_HEARTBEAT_H
#define TETHER_RDMA_HEARTBEAT_H

#include "rdma_impl.h"

/* A SIDE_BEAT on every side channel each TETHER_HEARTBEAT, and the alive() check. */
int tether__rdma_beat_start(rdma_ep *ep, int period_ms);
int tether__rdma_alive(tether__ep *tep);
/* Carry ws in the heartbeats (core/transport.h's watch). */
void tether__rdma_watch(tether__ep *tep, tether__waitstate *ws);

#endif
