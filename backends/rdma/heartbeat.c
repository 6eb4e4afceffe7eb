/* backends/rdma/heartbeat.c - liveness over the side channels (core/heartbeat.h has the thread and
 * the ledger). RDMA traffic says nothing of a peer that stopped (on UC no completion tells), so the
 * heartbeat thread sends a SIDE_BEAT header on every side channel each TETHER_HEARTBEAT, and a wait
 * with no progress for a period (tether__rdma_alive) reads the side channels, notes what arrived
 * from each peer (read, or waiting in the socket) and breaks the endpoint naming a peer silent for
 * TETHER_HEARTBEATS_MISSED periods. A heartbeat goes out only into an empty send queue, so it is
 * written whole or not at all (a partial one would tear the side channel's stream), and a peer
 * that reads nothing for hours holds at most its socket buffers of them. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "backends/net/socket.h"
#include "rdma_impl.h"

#ifdef MSG_NOSIGNAL
#define BEAT_FLAGS (MSG_NOSIGNAL | MSG_DONTWAIT)
#else
#define BEAT_FLAGS MSG_DONTWAIT /* SO_NOSIGPIPE is set on the socket instead (net/socket.c) */
#endif

/* Side-channel bytes arrived from peer p: read, or waiting in the socket. */
static uint64_t arrived(const rdma_peer *l)
{
    size_t in = 0, out = 0;
    if (l->fd >= 0 && !l->eof)
        tether__net_queued(l->fd, &in, &out);
    return l->side_bytes + in;
}

static void sample(rdma_ep *ep, int64_t now)
{
    for (int p = 0; p < ep->size; p++)
        if (p != ep->rank)
            tether__heartbeat_note(ep->beat, p, arrived(&ep->peers[p]), now);
}

static void beat(void *arg, int beating)
{
    rdma_ep *ep = arg;
    const uint32_t h[4] = {SIDE_BEAT, 0, 0, 0};
    pthread_mutex_lock(&ep->mu);
    for (int p = 0; beating && p < ep->size && !ep->err; p++) {
        rdma_peer *l = &ep->peers[p];
        size_t in = 0, queued = 0;
        if (p == ep->rank || l->fd < 0 || l->eof || l->bye)
            continue;
        tether__net_queued(l->fd, &in, &queued);
        if (queued == 0 && send(l->fd, h, sizeof h, BEAT_FLAGS) < 0 && errno != EAGAIN)
            TLOG_TRACE("rdma: heartbeat to rank %d (%s): %s", p, l->addr, strerror(errno));
    }
    if (!ep->err)
        sample(ep, tether__net_now_ms());
    pthread_mutex_unlock(&ep->mu);
}

int tether__rdma_beat_start(rdma_ep *ep, int period_ms)
{
    return tether__heartbeat_start(ep->size, period_ms, beat, ep, &ep->beat);
}

int tether__rdma_alive(tether_ep *tep)
{
    rdma_ep *ep = (rdma_ep *)tep;
    char why[TETHER_ERRMSG_MAX];
    int64_t now = tether__net_now_ms();
    pthread_mutex_lock(&ep->mu);
    int look = !ep->err && tether__heartbeat_due(ep->beat, now); /* a break is test()'s */
    if (look)
        sample(ep, now);
    /* the side channels' bytes, read (the progress thread reads them in ring mode) */
    for (int p = 0; look && p < ep->size && !ep->err && !ep->loop; p++)
        if (p != ep->rank)
            tether__rdma_side_read(ep, &ep->peers[p], p);
    for (int p = 0; look && p < ep->size && !ep->err; p++)
        if (p != ep->rank && !ep->peers[p].bye && !ep->peers[p].eof &&
            tether__heartbeat_silent(ep->beat, p, ep->peers[p].addr, now, why, sizeof why))
            tether__rdma_break(ep, TETHER_ETIMEDOUT, "%s", why);
    int rc = look && ep->err ? tether__fail(ep->err, "%s", ep->errmsg) : TETHER_OK;
    pthread_mutex_unlock(&ep->mu);
    return rc;
}
