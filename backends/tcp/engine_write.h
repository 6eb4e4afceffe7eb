/* backends/tcp/engine_write.h - a link's send queue and its writing (engine_write.c). */
#ifndef TETHER_TCP_ENGINE_WRITE_H
#define TETHER_TCP_ENGINE_WRITE_H

#include "engine_impl.h"

/* Append t to l's queue, writing nothing. */
void tether__tcp_tx_push(tether__link *l, tether__txmsg *t);
/* Write what l's socket (or ring) takes of its queue: 0, or the errno. Nothing more: a flush
 * (engine_lane.h) also moves the tunnels of l's pair, and fails over or breaks ep. Caller holds
 * ep->mu. */
int tether__tcp_tx_write(tether__tcp_ep *ep, tether__link *l);
/* Wake the progress thread to watch l's socket for room: its queue did not fit. Not while the
 * thread stands by (the program's threads flush it; the thread looks again within
 * TETHER__LOOP_STANDBY_MS): large sends fill the socket every time, and a wake-up each cost the
 * ring a fifth of its time at 4 MiB. Caller holds ep->mu. */
void tether__tcp_kick_for_room(tether__tcp_ep *ep, const tether__link *l);
/* Forget l's heartbeat frames only. */
void tether__tcp_tx_drop_beats(tether__link *l);

#endif
