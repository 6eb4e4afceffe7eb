/* backends/rdma/failover.c - a cable of several to a peer that stops carrying is taken out of use,
 * and the peer's other links carry its work.
 *
 * A link goes down when one of its work requests fails (a QP error: the port went down, RC retries
 * ran out), when it stops carrying without a word (UC: silence.c), or when the peer says so on the
 * side channel (SIDE_DOWN, reliable: both sides agree; it carries the reason, for the peer's line).
 * Each side stops taking frames from it at once, drops those it took but has not handled (frames
 * passing through that wait for room onward: kept in the dead link's receive slots they would be
 * frames beyond what the carrier's credits allow, and with every slot of a ring full, a ring
 * waiting on itself), and tells the other how many it handled in order, so that number is final.
 * A link whose peer has other links keeps its data frames until the peer has taken and handled
 * them, on RC too (tether__rdma_keeps, tether__rdma_free_kept): once both sides have spoken, every
 * frame from the peer's count on is still in its send slot and goes again, in order, on the first
 * live link, followed by what the dead link's queue still holds, then new parts for its lane. Each
 * frame
 * carries its part's lane (HDR_LANE), so the receiver matches it on that lane whichever link
 * brings it; a lane's frames all go on one live link, which keeps their order. A live link takes
 * turns between its own frames and its dead siblings' (tether__rdma_orphan). When the last link to
 * a peer goes down the job fails, as a dead peer does. */
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "backends/net/socket.h"
#include "cables.h"
#include "failover.h"
#include "post.h"
#include "rdma_impl.h"
#include "rejoin.h"
#include "side.h"
#include "state.h"

/* Both sides have stopped l: the frames the peer did not take go again, from peer_rx on. */
static int fail_over(rdma_ep *ep, rdma_link *l)
{
    rdma_link *c;
    if (!l->down || !l->peer_down || l->failed_over)
        return TETHER_OK;
    if ((int32_t)(l->peer_rx - l->win.freed) < 0 || (int32_t)(l->tx_seq - l->peer_rx) < 0)
        return tether__rdma_break(ep, TETHER_ENET,
                                  "rdma: rank %d says it handled %u frames on %s, but %u were "
                                  "sent and it had handled %u: is it running a different tether "
                                  "version?",
                                  l->peer, l->peer_rx, l->dev->name, l->tx_seq, l->win.freed);
    for (; l->win.freed != l->peer_rx; l->win.freed++) /* handled since it last told us */
        tether__rdma_slot_unref(l, l->win.kept[l->win.freed % DATA_SLOTS].slot);
    l->win.acked = l->peer_rx; /* those after it it dropped: they go again */
    l->win.rewinding = l->win.probing = 0;
    l->refeed = l->peer_rx;
    l->failed_over = 1;
    c = tether__rdma_carrier(ep, l);
    return c ? ep->push(ep, c) : TETHER_OK;
}

int tether__rdma_link_down(rdma_ep *ep, rdma_link *l, const char *why)
{
    rdma_link *c;
    uint32_t head[2];
    unsigned char said[sizeof head + SIDE_DOWN_WHY_MAX];
    size_t n = strlen(why) < SIDE_DOWN_WHY_MAX ? strlen(why) : SIDE_DOWN_WHY_MAX;
    char at[32];
    int e;
    /* A link back and taking frames, but not yet carrying (rejoin.c), that dies again gives up
     * its rejoin and tells the peer what its fresh QP brought, as a live one does: the peer may
     * carry on it already, and waits for that count. */
    if (l->down && l->rejoin != REJOIN_CONNECTED)
        return TETHER_OK;
    l->down = 1;
    /* what it took but has not handled is dropped: the peer sends it again on the carrier */
    l->rx_seq -= (uint32_t)l->nheld;
    l->taken_n -= (uint64_t)l->nheld;
    if (l->fence > l->taken_n) /* a fence from its rejoin (io.c) waits for none of them */
        l->fence = l->taken_n;
    l->held_head = l->nheld = 0;
    head[0] = (uint32_t)l->lane;
    head[1] = l->rx_seq;
    l->rejoin = REJOIN_NONE;
    l->have_peer_info = l->peer_rejoined = 0;
    tether__rdma_repay(ep, l, 1); /* its frames go again elsewhere, within that link's credits */
    tether__rdma_rejoin_later(ep, l);
    c = tether__rdma_carrier(ep, l);
    if (!c)
        return tether__rdma_break(ep, TETHER_ENET,
                                  "rdma: rank %d has no cable left to rank %d: the last one, %s, "
                                  "stopped carrying (%s)",
                                  ep->rank, l->peer, l->dev->name, why);
    tether__net_clock_text(at, sizeof at);
    fprintf(stderr, "tether: rank %d: cable %s to rank %d left at %s (%s); carrying on over %s\n",
            ep->rank, l->dev->name, l->peer, at, why, c->dev->name);
    memcpy(said, head, sizeof head); /* and why, so that the peer's line says it too */
    memcpy(said + sizeof head, why, n);
    if ((e = tether__rdma_side_tell(ep, l->peer, SIDE_DOWN, said, sizeof head + n)) != 0)
        return tether__rdma_break(ep, TETHER_EPEER,
                                  "rdma: telling rank %d (%s) that cable %s left failed: %s",
                                  l->peer, ep->peers[l->peer].addr, l->dev->name, strerror(e));
    return fail_over(ep, l);
}

int tether__rdma_peer_down(rdma_ep *ep, int peer, uint32_t lane, uint32_t rx, const char *said,
                           size_t len)
{
    rdma_peer *pe = &ep->peers[peer];
    rdma_link *l;
    char why[64 + SIDE_DOWN_WHY_MAX];
    if (lane >= (uint32_t)pe->nlinks || !pe->link[lane].dev) /* no such cable set up here */
        return tether__rdma_break(ep, TETHER_ENET,
                                  "rdma: rank %d (%s) says its cable %u to rank %d left, but they "
                                  "share %d: do both ranks read the same device matrix?",
                                  peer, pe->addr, lane, ep->rank, pe->nlinks);
    l = &pe->link[lane];
    l->peer_down = 1;
    l->peer_rx = rx;
    snprintf(why, sizeof why, "rank %d lost it%s%.*s", peer, len ? ": " : "", (int)len, said);
    TRY(tether__rdma_link_down(ep, l, why));
    return fail_over(ep, l);
}
