/* core/heartbeat.h - what every transport's liveness shares: a thread that calls the transport's
 * beat() every TETHER_HEARTBEAT (it sends its peers a heartbeat, by whatever channel it has), and
 * the ledger of when each peer was last heard from, which a waiting rank consults (the transport's
 * alive() in core/transport.h). A peer is heard from when bytes of it arrive: data or heartbeats.
 */
#ifndef TETHER_CORE_HEARTBEAT_H
#define TETHER_CORE_HEARTBEAT_H

#include <stddef.h>
#include <stdint.h>

typedef struct tether__heartbeat tether__heartbeat;

/* Start calling beat(ctx, send) four times a period_ms, from a thread of its own, for a world of
 * size ranks (every peer counts as heard from now): each call notes what arrived, and with send
 * (once a period, the first a period from now) sends the heartbeats too. *out is NULL, and no
 * thread runs, when period_ms <= 0 (a hand-made configuration without heartbeats). */
int tether__heartbeat_start(int size, int period_ms, void (*beat)(void *ctx, int send), void *ctx,
                            tether__heartbeat **out);
/* Stop the thread and free h (NULL is fine). beat() is not running once it returns. */
void tether__heartbeat_stop(tether__heartbeat *h);

/* The ledger; the caller serialises (the endpoint's lock). arrived: every byte ever received
 * from peer, in the socket or read; a change since the last note means the peer was heard now. */
void tether__heartbeat_note(tether__heartbeat *h, int peer, uint64_t arrived, int64_t now_ms);
/* 1 when a waiting rank should look again: a quarter period since the last look (which this
 * counts as taken); 0 for NULL (no heartbeats). */
int tether__heartbeat_due(tether__heartbeat *h, int64_t now_ms);
/* A thread that holds the endpoint's lock through one long step (a copy of gigabytes) keeps
 * beat() waiting for that lock, and the peers would take this rank for a stopped one: so it
 * stands in for the thread between bounded parts of the step. 1 when it should call beat(ctx, 1)
 * itself now, a period since it last did; 0 for NULL (no heartbeats). The caller serialises. */
int tether__heartbeat_stand_in(tether__heartbeat *h, int64_t now_ms);
/* 1 when peer has not been heard from for TETHER__HEARTBEATS_MISSED periods; then why holds the
 * message naming it (where: its address) for the transport's break. */
int tether__heartbeat_silent(const tether__heartbeat *h, int peer, const char *where,
                             int64_t now_ms, char *why, size_t why_len);

#endif
