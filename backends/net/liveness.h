/* backends/net/liveness.h - the heartbeats' verdict, the same for every backend: who has been
 * heard from, and which peer has been silent too long (core/heartbeat.h keeps the ledger and the
 * thread; each backend says how to count a peer's bytes and how to fail).
 *
 * A rank may wait in a collective for hours while its peers are busy elsewhere, so "no progress
 * for TETHER_TIMEOUT" cannot tell a busy peer from a stopped one. What arrives from each peer is
 * counted where the kernel has it (read, or waiting in its sockets), by the heartbeat thread and by
 * a wait with no progress for a period (the transport's alive()), which also reads what the
 * sockets hold so that an hour of heartbeats never fills one; a peer that has sent no byte for
 * TETHER__HEARTBEATS_MISSED periods breaks the endpoint. */
#ifndef TETHER_NET_LIVENESS_H
#define TETHER_NET_LIVENESS_H

#include <pthread.h>
#include <stdint.h>

#include "core/heartbeat.h"

/* A backend's peers as the verdict sees them; every callback runs with the endpoint's mutex held
 * and gets the endpoint. */
typedef struct tether__liveness {
    /* Bytes arrived from peer so far (read, or in its sockets); 0 when it is not watched here. */
    int (*arrived)(void *ep, int peer, uint64_t *bytes);
    /* Its address, when a silence of peer breaks the endpoint; NULL when not (it said bye). */
    const char *(*silence_fails)(void *ep, int peer);
    /* Read what the sockets hold (nothing when a progress thread does). */
    void (*drain)(void *ep);
    /* Break the endpoint with ETIMEDOUT and why. */
    void (*fail)(void *ep, const char *why);
} tether__liveness;

/* Note who has been heard from since the last look (the heartbeat thread's call). */
void tether__liveness_sample(const tether__liveness *lv, void *ep, int size,
                             tether__heartbeat *beat, int64_t now_ms);

/* The transport's alive(): once a quarter period, sample, drain and break on a silent peer. Takes
 * mu; *err and errmsg are the endpoint's sticky status, reported when this look broke it. */
typedef struct tether__liveness_ep {
    void *ep;
    int size; /* peers 0..size-1 */
    tether__heartbeat *beat;
    pthread_mutex_t *mu;
    const int *err;
    const char *errmsg;
} tether__liveness_ep;
int tether__liveness_check(const tether__liveness *lv, const tether__liveness_ep *e);

#endif
