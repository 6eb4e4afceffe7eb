/* backends/rdma/rejoin.c - a dead cable whose device comes back is used again.
 *
 * A link out of use (failover.c) whose kept frames have all gone on a live sibling is looked
 * at every REJOIN_CHECK_MS: once its port is active it gets a fresh QP, as at set-up (its slots
 * and counts start over, its receives posted at INIT), and the QP's details go to the peer on the
 * side channel (SIDE_REJOIN). The side that has both its own and the peer's moves the QP to RTS
 * and says so (SIDE_REJOINED): from then on it takes the frames that come on it. It sends on it
 * again once the peer's QP is at RTS too, and every frame of the lane that a sibling carried has
 * been acknowledged (the sibling has nothing unacknowledged, and no part of the lane is half
 * framed), so the lane's frames cannot arrive out of order: looked at when a send begins too,
 * before the sibling takes the new parts. Those frames may not all be handled yet (passing
 * through, they wait for room onward, and the peer takes the link's frames only after them), so
 * the link holds as many of its credits back until they are (rdma_link.owed): the lane never has
 * more frames waiting at the peer than one link's credits, which a ring's flow control counts on.
 * The old QP's completions still queued
 * are told apart by the generation in their ids (io.c wr_id). A link that left with its port
 * up (silence.c, or RC retries that ran out) is tried again only after a back-off, and leaves
 * again if still dead. */
#include <stdio.h>
#include <string.h>

#include "backends/net/socket.h"
#include "cables.h"
#include "qp.h"
#include "rdma_impl.h"
#include "rejoin.h"
#include "retransmit.h"
#include "side.h"
#include "state.h"

#define REJOIN_CHECK_MS 100
/* A cable that left with its port up (silent, or RC's retries ran out: nothing says it was pulled)
 * is tried again only after REJOIN_AFTER_MS, doubled each time it leaves again (at most
 * REJOIN_DOUBLINGS times: 32 s), until it has carried REJOIN_SETTLED_MS since it came back: one
 * still dead costs its lane one failover per try, not one every few hundred ms. */
#define REJOIN_AFTER_MS 1000
#define REJOIN_DOUBLINGS 5
#define REJOIN_SETTLED_MS 30000

static int port_active(rdma_ep *ep, rdma_dev *d)
{
    struct ibv_port_attr pa;
    memset(&pa, 0, sizeof pa);
    return ep->ibv.query_port(d->ctx, 1, &pa) == 0 && pa.state == IBV_PORT_ACTIVE;
}

void tether__rdma_rejoin_later(rdma_ep *ep, rdma_link *l)
{
    int64_t now = tether__now_us();
    if (!port_active(ep, l->dev))
        return; /* pulled: tried again once its port is back */
    if (l->back_us && now - l->back_us >= (int64_t)REJOIN_SETTLED_MS * 1000)
        l->leaves = 0;
    l->rejoin_after_us = now + ((int64_t)REJOIN_AFTER_MS * 1000
                                << (l->leaves < REJOIN_DOUBLINGS ? l->leaves : REJOIN_DOUBLINGS));
    l->leaves++;
}

/* The link's state as a fresh link's: what it kept and counted belonged to the dead QP. */
static void reset(rdma_link *l)
{
    l->credits = 0;
    l->peer_released = l->released = l->pending = 0;
    l->ctrl_out = l->ctrl_acked = l->ctrl_seen = 0;
    l->ctrl_us = 0;
    l->tx_seq = l->rx_seq = l->refeed = l->peer_rx = 0;
    l->peer_down = 0;
    memset(l->slot_refs, 0, sizeof l->slot_refs);
    memset(&l->win, 0, sizeof l->win);
    l->held_head = l->nheld = 0;
    l->owed = 0;
    l->fresh = 1;    /* io.c: its first frame fences its lane */
    l->heard_us = 0; /* silence.c: heard from the next look on */
}

/* Tell the peer of l's rejoin on the side channel. When that fails, the side channel is broken:
 * a peer that closed normally meanwhile (its bye waits to be read, then the end of its side
 * channel) needs the cable no more, and one that died is named by the side channel's reader
 * (side_read.c) as for any peer; either way l stays out, and this is not what fails the job. */
static int tell(rdma_ep *ep, rdma_link *l, int type, const void *msg, size_t len)
{
    if (tether__rdma_side_tell(ep, l->peer, type, msg, len) != 0) {
        l->rejoin = REJOIN_NONE;
        l->rejoin_after_us = INT64_MAX;
    }
    return TETHER_OK;
}

/* Our fresh QP's details to the peer: the first step, once the port is back. */
static int start(rdma_ep *ep, rdma_link *l)
{
    uint32_t msg[1 + sizeof(rdma_qp_info) / 4];
    int rc;
    if (l->qp && (rc = ep->ibv.destroy_qp(l->qp)) != 0)
        TLOG_WARN("rdma: ibv_destroy_qp for rank %d on %s failed: %s", l->peer, l->dev->name,
                  strerror(rc));
    l->qp = NULL;
    reset(l);
    l->gen++;
    if ((rc = tether__rdma_qp_create(ep, l)) != TETHER_OK)
        return tether__rdma_break(ep, rc, "%s", tether_last_error());
    l->mine = tether__rdma_qp_mine(ep, l);
    msg[0] = (uint32_t)l->lane;
    memcpy(msg + 1, &l->mine, sizeof l->mine);
    l->rejoin = REJOIN_SENT;
    return tell(ep, l, SIDE_REJOIN, msg, sizeof msg);
}

/* Ours and the peer's details known: to RTS, and say so. */
static int connect_again(rdma_ep *ep, rdma_link *l)
{
    uint32_t lane = (uint32_t)l->lane;
    int rc;
    if (l->rejoin != REJOIN_SENT || !l->have_peer_info)
        return TETHER_OK;
    if ((rc = tether__rdma_qp_connect(ep, l, &l->mine, &l->peer_info)) != TETHER_OK)
        return tether__rdma_break(ep, rc, "%s", tether_last_error());
    l->rejoin = REJOIN_CONNECTED;
    return tell(ep, l, SIDE_REJOINED, &lane, sizeof lane);
}

int tether__rdma_revive(rdma_ep *ep, rdma_link *l)
{
    rdma_link *c;
    char at[32];
    if (!l->down || l->rejoin != REJOIN_CONNECTED || !l->peer_rejoined ||
        (l->sendq && l->sendq->framed) || !(c = tether__rdma_carrier(ep, l)) ||
        c->win.acked != c->tx_seq)
        return TETHER_OK;
    l->down = l->failed_over = 0;
    l->owed = (int)(c->tx_seq - c->peer_released); /* taken there, not all handled yet */
    l->owed_lane = c->lane;
    l->owed_mark = c->tx_seq;
    l->credits -= l->owed;
    l->rejoin = REJOIN_NONE;
    l->have_peer_info = l->peer_rejoined = 0;
    l->rejoins++;
    l->back_us = tether__now_us();
    l->heard_us = 0; /* silence.c: not silent for the time it was out */
    tether__net_clock_text(at, sizeof at);
    fprintf(stderr, "tether: rank %d: cable %s to rank %d is back at %s; carrying over it again\n",
            ep->rank, l->dev->name, l->peer, at);
    return ep->push(ep, l);
}

void tether__rdma_repay(rdma_ep *ep, rdma_link *c, int gone)
{
    rdma_peer *pe = &ep->peers[c->peer];
    for (int k = 0; k < pe->nlinks; k++) {
        rdma_link *l = &pe->link[k];
        int32_t left = gone ? 0 : (int32_t)(l->owed_mark - c->peer_released);
        if (l == c || !l->owed || l->owed_lane != c->lane)
            continue;
        if (left < 0)
            left = 0;
        if (l->owed > left) {
            l->credits += l->owed - left;
            l->owed = left;
            tether__rdma_fed(l);
        }
    }
}

int tether__rdma_rejoin_tick(rdma_ep *ep, int64_t now_us)
{
    int look = now_us >= ep->rejoin_us;
    for (RDMA_EACH_LINK(ep, l)) {
        if (!l->down || ep->peers[l->peer].bye) /* a peer closing needs no cable back */
            continue;
        /* its kept frames all carried (its queue's parts may still be) */
        if (look && l->rejoin == REJOIN_NONE && l->failed_over && l->refeed == l->tx_seq &&
            !l->nheld && now_us >= l->rejoin_after_us && port_active(ep, l->dev)) {
            TRY(start(ep, l));
            TRY(connect_again(ep, l));
        }
        TRY(tether__rdma_revive(ep, l));
    }
    if (look)
        ep->rejoin_us = now_us + REJOIN_CHECK_MS * 1000;
    return TETHER_OK;
}

int tether__rdma_peer_rejoin(rdma_ep *ep, int peer, uint32_t lane, const rdma_qp_info *info)
{
    rdma_peer *pe = &ep->peers[peer];
    rdma_link *l;
    if (!info && lane < (uint32_t)pe->nlinks && pe->link[lane].down &&
        pe->link[lane].rejoin == REJOIN_NONE)
        return TETHER_OK; /* for a rejoin given up here since: the cable died again */
    if (lane >= (uint32_t)pe->nlinks || !pe->link[lane].down ||
        (!info && pe->link[lane].rejoin != REJOIN_CONNECTED))
        return tether__rdma_break(ep, TETHER_ENET,
                                  "rdma: rank %d (%s) rejoins its cable %u to rank %d out of turn: "
                                  "is it running a different tether version?",
                                  peer, pe->addr, lane, ep->rank);
    l = &pe->link[lane];
    if (!info) {
        l->peer_rejoined = 1;
        return tether__rdma_revive(ep, l);
    }
    l->peer_info = *info;
    l->have_peer_info = 1;
    return connect_again(ep, l);
}
