/* backends/rdma/heartbeat.c - liveness over the side channels (core/heartbeat.h has the thread and
 * the ledger, backends/net/liveness.h the verdict). RDMA traffic says nothing of a peer that
 * stopped (on UC no completion tells), so the heartbeat thread sends a SIDE_BEAT header on every
 * side channel each TETHER_HEARTBEAT, and a wait with no progress for a period (tether__rdma_alive)
 * reads the side channels, notes what arrived from each peer (read, or waiting in the socket) and
 * breaks the endpoint naming a peer silent for TETHER__HEARTBEATS_MISSED periods. A heartbeat goes
 * out only into an empty send queue, so it is written whole or not at all (a partial one would tear
 * the side channel's stream), and a peer that reads nothing for hours holds at most its socket
 * buffers of them. Each heartbeat carries this rank's wait-state records too (core/waitstate.h:
 * the deadlock and failed-peer verdicts), which the side channel's reader merges. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "backends/net/liveness.h"
#include "backends/net/socket.h"
#include "heartbeat.h"
#include "io.h"
#include "rdma_impl.h"
#include "side_read.h"
#include "state.h"

#ifdef MSG_NOSIGNAL
#define BEAT_FLAGS (MSG_NOSIGNAL | MSG_DONTWAIT)
#else
#define BEAT_FLAGS MSG_DONTWAIT /* SO_NOSIGPIPE is set on the socket instead (net/socket.c) */
#endif

/* Side-channel bytes arrived from peer p: read, or waiting in the socket. */
static int arrived(void *arg, int p, uint64_t *bytes)
{
    const rdma_ep *ep = arg;
    const rdma_peer *l = &ep->peers[p];
    size_t in = 0, out = 0;
    if (p == ep->rank)
        return 0;
    if (l->fd >= 0 && !l->eof)
        tether__net_queued(l->fd, &in, &out);
    *bytes = l->side_bytes + in;
    return 1;
}

static const char *silence_fails(void *arg, int p)
{
    const rdma_ep *ep = arg;
    const rdma_peer *l = &ep->peers[p];
    return p != ep->rank && !l->bye && !l->eof ? l->addr : NULL;
}

/* the side channels' bytes, read (the progress thread reads them in ring mode) */
static void drain(void *arg)
{
    rdma_ep *ep = arg;
    for (int p = 0; p < ep->size && !ep->err && !ep->loop; p++)
        if (p != ep->rank)
            tether__rdma_side_read(ep, &ep->peers[p], p);
}

static void fail(void *arg, const char *why)
{
    tether__rdma_break(arg, TETHER_ETIMEDOUT, "%s", why);
}

static const tether__liveness liveness = {
    .arrived = arrived, .silence_fails = silence_fails, .drain = drain, .fail = fail};

/* The heartbeat into ep->records.blob: the header, then this rank's wait-state records
 * (core/waitstate.h), when kept; else the header alone into head. Where it starts; *len bytes. */
static const unsigned char *heartbeat(rdma_ep *ep, unsigned char head[SIDE_HDR], size_t *len)
{
    uint32_t h[4] = {SIDE_BEAT, 0, 0, 0};
    unsigned char *at = ep->records.ws ? ep->records.blob : head;
    h[3] = (uint32_t)tether__net_records_pack(
        &ep->records, ep->live, ep->size, atomic_load_explicit(&ep->moved, memory_order_relaxed),
        SIDE_HDR);
    memcpy(at, h, sizeof h);
    *len = SIDE_HDR + h[3];
    return at;
}

/* UC: the program may be away from tether (computing, or done with its last call) while a peer
 * waits for an acknowledgement or a frame of ours is lost: each tick moves what came and lets the
 * resends and acknowledgements go (retransmit.c); with several cables to a peer (RC too), also
 * the acknowledgements a failover counts on and a cable's return (rejoin.c). */
static void uc_tick(rdma_ep *ep)
{
    int moved = 0;
    tether__rdma_poll_cqs(ep, &moved); /* its acknowledgements owed go too */
    if (moved && ep->loop) {           /* requests may have finished: wake their waits */
        ep->events++;
        tether__loop_signal(ep->loop);
    }
}

static void beat(void *arg, int beating)
{
    rdma_ep *ep = arg;
    unsigned char head[SIDE_HDR];
    size_t len = 0;
    pthread_mutex_lock(&ep->mu);
    const unsigned char *h = beating ? heartbeat(ep, head, &len) : NULL;
    for (int p = 0; beating && p < ep->size && !ep->err; p++) {
        rdma_peer *l = &ep->peers[p];
        size_t in = 0, queued = 0;
        if (p == ep->rank || l->fd < 0 || l->eof || l->bye)
            continue;
        tether__net_queued(l->fd, &in, &queued);
        if (queued == 0 && send(l->fd, h, len, BEAT_FLAGS) < 0 && errno != EAGAIN)
            TLOG_TRACE("rdma: heartbeat to rank %d (%s): %s", p, l->addr, strerror(errno));
    }
    if (!ep->err)
        tether__liveness_sample(&liveness, ep, ep->size, ep->beat, tether__net_now_ms());
    if (!ep->err && ep->keeps)
        uc_tick(ep);
    pthread_mutex_unlock(&ep->mu);
}

int tether__rdma_beat_start(rdma_ep *ep, int period_ms)
{
    return tether__heartbeat_start(ep->size, period_ms, beat, ep, &ep->beat);
}

void tether__rdma_watch(tether__ep *tep, tether__waitstate *ws)
{
    rdma_ep *ep = (rdma_ep *)tep;
    pthread_mutex_lock(&ep->mu);
    tether__net_records_watch(&ep->records, ws, ep->size, SIDE_HDR + SIDE_BEAT_MAX);
    pthread_mutex_unlock(&ep->mu);
}

int tether__rdma_alive(tether__ep *tep)
{
    rdma_ep *ep = (rdma_ep *)tep;
    tether__liveness_ep e = {ep, ep->size, ep->beat, &ep->mu, &ep->err, ep->errmsg};
    return tether__liveness_check(&liveness, &e);
}
