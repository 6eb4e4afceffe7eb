/* backends/rdma/io.c - the data path: frames out under credits, completions in, matching, credit
 * returns.
 *
 * A send is cut into frames of at most SLOT_PAYLOAD bytes, copied into send slots and posted, one
 * frame per credit; it is done once its last frame is posted (the slots hold the bytes). A frame
 * that comes in is checked (status, sequence) and handled in arrival order (in_run): its payload
 * copied to the matching receive or kept as unexpected, or, ring mode, passed on unchanged into a
 * send slot of the onward link (cut-through: a message passing through is never assembled here).
 * Its slot is then reposted, which earns the peer a credit back; a frame that cannot go on yet
 * stays in its slot, and so do the frames behind it, so a slow onward link holds the upstream
 * sender back (rdma_impl.h: flow control, and why a cycle of such waits cannot form). A SEND is as
 * small as its payload plus the header, and inline when the device allows. A large message to a
 * peer with several links goes as one part per link, each matched on its own link. On UC a data
 * frame stays in its send slot until the peer acknowledges it, and one out of sequence is dropped
 * and the gap resent (retransmit.c). On RC a large message to a peer of one link goes by
 * rendezvous instead (rv_*: docs/rdma.md): an announcing frame (RTS), the receiver's registered
 * buffer in answer (CTS), one RDMA WRITE into it and a FIN frame; nothing is copied. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/net/socket.h"
#include "cables.h"
#include "core/params.h"
#include "device.h"
#include "failover.h"
#include "io.h"
#include "post.h"
#include "rdma_impl.h"
#include "register.h"
#include "rejoin.h"
#include "retransmit.h"
#include "route.h"
#include "side_read.h"
#include "silence.h"
#include "state.h"

#define POLL_BATCH 16
#define ACK_RETRY_US 1000 /* an acknowledgement that found no room: look again (not spin) */

/* Which bytes of a len-byte message link k of nlinks carries: both sides cut the same way from the
 * length alone, so the parts meet; small messages go whole on link 0 (*n = 0: nothing on k). */
static int part_bounds(uint64_t len, int k, int nlinks, uint64_t *lo, uint64_t *n)
{
    if (nlinks == 1 || len < STRIPE_MIN) {
        *lo = 0;
        *n = k == 0 ? len : 0;
        return k == 0;
    }
    *lo = len * (uint64_t)k / (uint64_t)nlinks;
    *n = len * (uint64_t)(k + 1) / (uint64_t)nlinks - *lo;
    return 1;
}

/* The links a message to or from peer travels on: its own, or (forwarded) none of ours. */
static int links_to(const rdma_ep *ep, int peer)
{
    return ep->peers[peer].nlinks;
}

/* The next frame's header; it tells the peer what we have taken and reposted, and asks for a
 * resend after a gap. */
static rdma_hdr header(rdma_link *l, uint32_t type, const struct tether__req *r, uint64_t off)
{
    static const tether__tag none;
    rdma_hdr h = {.type = type,
                  .seq = l->tx_seq,
                  .credits = l->released,
                  .ctrl_seen = l->ctrl_seen,
                  .ack = l->rx_seq,
                  .flags = !l->win.nack_owed                 ? 0
                           : l->win.nack_owed == NACK_ANSWER ? HDR_NACK | HDR_PROBE
                                                             : HDR_NACK,
                  .tag = r ? r->tag : none,
                  .msglen = r ? r->len : 0,
                  .offset = off,
                  .src = r ? r->src : 0,
                  .dst = r ? r->dst : 0};
    l->pending = 0;
    l->win.ack_told = l->rx_seq;
    l->win.ack_owed = 0;
    if (l->win.nack_owed)
        l->win.nacked = l->rx_seq + 1;
    l->win.nack_owed = 0;
    return h;
}

/* A frame into a free send slot, posted; a data frame takes the next number (and on UC stays in its
 * slot until acknowledged). */
static int post_frame(rdma_ep *ep, rdma_link *l, const rdma_hdr *h, const void *payload, size_t n)
{
    int slot = l->free_send[--l->nfree_send];
    unsigned char *p = tether__rdma_slot(l, slot);
    size_t len = sizeof *h + n;
    memcpy(p, h, sizeof *h);
    if (n)
        memcpy(p + sizeof *h, payload, n);
    l->slot_refs[slot - RECV_SLOTS] = 1;
    TRY(tether__rdma_post_slot(ep, l, slot, len));
    if (h->type == FRAME_DATA)
        tether__rdma_keep(ep, l, l->tx_seq++, slot, (int)len);
    return TETHER_OK;
}

/* The part heading l's queue is wholly in frames: the next one's turn. */
static void sendq_pop(rdma_link *l)
{
    l->sendq = l->sendq->qnext;
    if (!l->sendq)
        l->sendq_tail = NULL;
}

static void sendq_append(rdma_link *l, rdma_part *pt)
{
    if (l->sendq_tail)
        l->sendq_tail->qnext = pt;
    else
        l->sendq = pt;
    l->sendq_tail = pt;
}

/* Credits l's own frames leave unused: OWN_SPARE on a link that may carry frames passing through
 * (ring mode from 4 ranks: the first cable, or the one carrying its work while it is out), so they
 * always find one (rdma_impl.h). */
static int own_spare(rdma_ep *ep, rdma_link *l)
{
    return ep->ring && ep->size > 3 && tether__rdma_carrier(ep, &ep->peers[l->peer].link[0]) == l
               ? OWN_SPARE
               : 0;
}

/* A control frame (credits, acknowledgements, a NACK) if the peer has a receive kept for it.
 * now_us: the time on UC (one clock read per progress: test() spins on it). Not after the peer's
 * last bye; after its first, a ring rank still passes on others' frames, and needs the credits
 * for them: withheld, a closing rank with nothing more of its own to send back stalled the ranks
 * whose messages went through it (the campaign's seed 809496612, rdma-rc-ring all_to_all). */
static int send_control(rdma_ep *ep, rdma_link *l, int64_t now_us, uint32_t flags)
{
    rdma_hdr h;
    if (l->nfree_send == 0 || ep->peers[l->peer].bye_final ||
        !tether__rdma_ctrl_room(ep, l, now_us))
        return TETHER_OK;
    h = header(l, FRAME_CREDIT, NULL, 0);
    h.flags |= flags;
    TRY(post_frame(ep, l, &h, NULL, 0));
    l->ctrl_out++;
    l->ctrl_us = now_us;
    return TETHER_OK;
}

/* Whether a send of len bytes to peer goes by rendezvous: RC, one link to it (no cable failover
 * to replay a WRITE on, no rank on the way), from TETHER_RDMA_WRITE_MIN up. */
static int rv_wanted(const rdma_ep *ep, int peer, size_t len)
{
    return ep->write_min && len >= ep->write_min && len <= RV_WRITE_MAX && !ep->uc && !ep->ring &&
           ep->peers[peer].nlinks == 1;
}

/* A rendezvous id of l's not under way, or -1. */
static int rv_free_id(const rdma_link *l)
{
    for (int id = 0; id < RV_MAX; id++)
        if (!l->rv_out[id])
            return id;
    return -1;
}

/* Whether some message of l's is in rendezvous still (its WRITE not yet complete). */
static int rv_busy(const rdma_link *l)
{
    for (int id = 0; id < RV_MAX; id++)
        if (l->rv_out[id])
            return 1;
    return 0;
}

/* Part pt heading l's queue is announced (RTS) under id, its buffer registered for the WRITE: it
 * leaves the queue, so the messages behind it go on while the receiver finds its receive. */
static int rv_announce(rdma_ep *ep, rdma_link *l, rdma_part *pt, int id)
{
    rdma_rv rv = {.id = (uint32_t)id};
    rdma_hdr h = header(l, FRAME_DATA, pt->req, 0);
    h.flags |= HDR_RTS;
    TRY(post_frame(ep, l, &h, &rv, sizeof rv));
    l->credits--;
    l->rv_out[id] = pt;
    sendq_pop(l);
    return TETHER_OK;
}

/* Our rendezvous frame on l: CTS, the buffer of receive part pt; FIN, send part pt's WRITE went. */
static int rv_frame(rdma_ep *ep, rdma_link *l, uint32_t flag, const rdma_part *pt, int id)
{
    rdma_rv rv = {.id = (uint32_t)id};
    rdma_hdr h = header(l, FRAME_DATA, NULL, 0);
    h.flags |= flag;
    h.msglen = pt->len;
    h.src = (uint32_t)ep->rank;
    h.dst = (uint32_t)l->peer;
    if (flag == HDR_CTS) {
        rv.addr = (uintptr_t)pt->rx.buf;
        rv.rkey = pt->mr->rkey;
        h.msglen = pt->rx.len;
    }
    TRY(post_frame(ep, l, &h, &rv, sizeof rv));
    l->credits--;
    return TETHER_OK;
}

/* What l owes the peer's rendezvous and its own: CTS for receives ready, WRITE then FIN for
 * announced messages the peer has a buffer for, while credits last. */
static int rv_replies(rdma_ep *ep, rdma_link *l)
{
    for (int id = 0; id < RV_MAX && (l->cts_due | l->go_due); id++) {
        unsigned bit = 1u << id;
        if ((l->cts_due & bit) && l->credits > own_spare(ep, l) && l->nfree_send > 0) {
            TRY(rv_frame(ep, l, HDR_CTS, l->rv_in[id], id));
            l->cts_due &= ~bit;
        }
        if ((l->go_due & bit) && l->credits > own_spare(ep, l) && l->nfree_send > 0) {
            TRY(tether__rdma_post_write(ep, l, l->rv_out[id], id));
            TRY(rv_frame(ep, l, HDR_FIN, l->rv_out[id], id)); /* RC: after the WRITE's bytes */
            l->go_due &= ~bit;
        }
    }
    return TETHER_OK;
}

/* The next frame of the part heading owner's queue, on l (owner itself, or a dead sibling). */
static int part_frame(rdma_ep *ep, rdma_link *l, rdma_link *owner)
{
    rdma_part *pt = owner->sendq;
    struct tether__req *r = pt->req;
    size_t n = pt->len - pt->framed < SLOT_PAYLOAD ? pt->len - pt->framed : SLOT_PAYLOAD;
    rdma_hdr h;
    if (pt->rv) { /* unless RV_MAX are under way on l or the device takes no more MRs: frames */
        int id = rv_free_id(l);
        if (id >= 0 &&
            !tether__rdma_reg(ep, l, (void *)(uintptr_t)(r->buf + pt->lo), pt->len, 0, &pt->mr))
            return rv_announce(ep, l, pt, id);
        pt->rv = 0;
    }
    h = header(l, FRAME_DATA, r, pt->framed);
    h.flags |= (uint32_t)pt->lane << HDR_LANE_SHIFT;
    TRY(post_frame(ep, l, &h, r->buf + pt->lo + pt->framed, n));
    l->credits--;
    pt->framed += n;
    if (pt->framed == pt->len) {
        sendq_pop(owner);
        if (--r->parts_left == 0)
            r->done = 1;
    }
    return TETHER_OK;
}

/* Dead link d's oldest frame the peer did not take, again on l with l's numbers (failover.c). */
static int refeed_frame(rdma_ep *ep, rdma_link *l, rdma_link *d)
{
    const rdma_kept *k = &d->win.kept[d->refeed % DATA_SLOTS];
    const unsigned char *p = tether__rdma_slot(d, k->slot);
    rdma_hdr old, h;
    memcpy(&old, p, sizeof old);
    h = header(l, FRAME_DATA, NULL, old.offset);
    h.flags |= old.flags & HDR_LANE_MASK;
    h.tag = old.tag;
    h.msglen = old.msglen;
    h.src = old.src;
    h.dst = old.dst;
    TRY(post_frame(ep, l, &h, p + sizeof old, (size_t)k->len - sizeof old));
    l->credits--;
    d->refeed++;
    return TETHER_OK;
}

/* Whether l may send control frames: in use, or back and connected though not yet carrying its
 * lane (rejoin.c): the peer's frames on it need their credits and acknowledgements. */
static int speaks(const rdma_link *l)
{
    return !l->down || l->rejoin == REJOIN_CONNECTED;
}

static int push_at(rdma_ep *ep, rdma_link *l, int64_t now_us)
{
    int resending;
    if (!speaks(l)) /* its work goes on a live sibling's turns (failover.c) */
        return TETHER_OK;
    resending = l->down || tether__rdma_resend(ep, l, now_us); /* down: control frames only */
    if (resending < 0)
        return resending;
    if (!resending)
        TRY(rv_replies(ep, l));
    while (!resending && l->credits > own_spare(ep, l) && l->nfree_send > 0) {
        rdma_link *d = tether__rdma_orphan(ep, l); /* turns: its own frames, a dead sibling's */
        if (d && (!l->sendq || l->turn++ % 2))
            TRY(d->refeed != d->tx_seq ? refeed_frame(ep, l, d) : part_frame(ep, l, d));
        else if (l->sendq)
            TRY(part_frame(ep, l, l));
        else
            break;
    }
    if (l->sendq && l->credits <= own_spare(ep, l))
        tether__rdma_starve(ep, l, now_us);
    /* Returns pile up with no data going back: send them alone, in a receive kept for that; at
     * once while frames of l's are held back, as the peer may wait for just that slot; and a gap's
     * NACK at once. */
    if (l->pending >= DATA_SLOTS / 2 || (l->pending && l->nheld) || l->win.nack_owed)
        TRY(send_control(ep, l, now_us, 0));
    return TETHER_OK;
}

int tether__rdma_push(rdma_ep *ep, rdma_link *l)
{
    return push_at(ep, l, ep->keeps ? tether__now_us() : 0);
}

/* UC: control frames for links whose peer waits on our acknowledgements while nothing else goes;
 * in *due_ms how long until the next is due (ms, rounded up), or -1: how long a wait may sleep. */
static int quiet(rdma_ep *ep, int64_t now, int *due_ms)
{
    int64_t next = -1;
    for (RDMA_EACH_LINK(ep, l)) {
        int64_t due = l->qp && speaks(l) ? tether__rdma_ack_due(ep, l, now) : -1;
        int64_t want = l->qp && speaks(l) ? tether__rdma_credit_due(ep, l, now) : -1;
        if (due == 0 || want == 0) {
            uint32_t out = l->ctrl_out;
            TRY(send_control(ep, l, now, want == 0 ? HDR_WANT : 0));
            if (want == 0 && l->ctrl_out != out) { /* asked: again after a longer wait */
                l->starved_us = now;
                l->credit_probes++;
            }
            due = tether__rdma_ack_due(ep, l, now) == 0 ? ACK_RETRY_US : -1; /* no room yet */
            want = tether__rdma_credit_due(ep, l, now);
            want = want == 0 ? ACK_RETRY_US : want;
        }
        if (want >= 0 && (due < 0 || want < due))
            due = want;
        if (due >= 0 && (next < 0 || due < next))
            next = due;
    }
    *due_ms = next < 0 ? -1 : (int)((next + 999) / 1000);
    return TETHER_OK;
}

int tether__rdma_send(rdma_ep *ep, struct tether__req *r)
{
    int direct = links_to(ep, r->peer) > 0; /* else forwarded: whole on the first link of the way */
    int nlinks = direct ? links_to(ep, r->peer) : 1;
    rdma_link *hop = direct ? NULL : tether__rdma_hop(ep, r->peer);
    if (!direct && !hop)
        return tether__rdma_break(ep, TETHER_EINTERNAL, "rdma: rank %d has no way to rank %d",
                                  ep->rank, r->peer);
    r->nparts = r->parts_left = 0;
    for (int k = 0; k < nlinks; k++) {
        uint64_t lo, n;
        rdma_part *pt = &r->part[r->nparts];
        rdma_link *l = direct ? &ep->peers[r->peer].link[k] : hop;
        if (l->down) /* back since the last send? (rejoin.c) */
            TRY(tether__rdma_revive(ep, l));
        if (!part_bounds(r->len, k, nlinks, &lo, &n))
            continue;
        *pt = (rdma_part){.req = r,
                          .lo = (size_t)lo,
                          .len = (size_t)n,
                          .lane = direct ? k : 0,
                          .rv = rv_wanted(ep, r->peer, (size_t)n)};
        r->nparts++;
        r->parts_left++;
        sendq_append(l, pt); /* a dead link's: carried by a live one (failover.c) */
    }
    for (int k = 0; k < nlinks; k++) {
        rdma_link *c = tether__rdma_carrier(ep, direct ? &ep->peers[r->peer].link[k] : hop);
        if (c)
            TRY(tether__rdma_push(ep, c));
    }
    return TETHER_OK;
}

int tether__rdma_sends_left(rdma_ep *ep)
{
    for (RDMA_EACH_LINK(ep, l)) {
        if (!l->qp) /* open failed */
            continue;
        if (l->down ? !l->failed_over || l->refeed != l->tx_seq || l->sendq || l->nheld
                    : l->sendq || l->nheld || tether__rdma_sending(ep, l) > 0 || rv_busy(l))
            return 1;
    }
    return 0;
}

static int protocol_error(rdma_ep *ep, const rdma_link *l, const char *what)
{
    return tether__rdma_break(ep, TETHER_ENET,
                              "rdma: rank %d sent a malformed frame on %s (%s): "
                              "is it running a different tether version?",
                              l->peer, l->dev->name, what);
}

static int mismatch(rdma_ep *ep, int src, tether__tag got, uint64_t got_len, tether__tag want,
                    uint64_t want_len)
{
    return tether__rdma_break(ep, TETHER_EMISMATCH,
                              "rank %d sent %llu bytes with signature %08x for group %08x seq %08x "
                              "step %u, but rank %d expects %llu bytes with signature %08x (step "
                              "%u): the ranks called different collectives or with different "
                              "counts, dtypes, ops or roots, in this call or (a collective's "
                              "signature chains its group's earlier ones) an earlier collective",
                              src, (unsigned long long)got_len, got.sig, got.group, got.seq,
                              got.step, ep->rank, (unsigned long long)want_len, want.sig,
                              want.step);
}

void tether__rdma_track(tether__ep *tep, tether__passed *p)
{
    rdma_ep *ep = (rdma_ep *)tep;
    pthread_mutex_lock(&ep->mu);
    ep->passed = p;
    pthread_mutex_unlock(&ep->mu);
}

int tether__rdma_sweep_stale(rdma_ep *ep)
{
    char why[TETHER__ERRMSG_MAX];
    int moved = 0;
    tether__passed_action look = tether__passed_look(ep->passed, &ep->seen, ep->recvs);
    if (look == TETHER__PASSED_NONE)
        return TETHER_OK;
    if (look == TETHER__PASSED_DRAIN) { /* frames in, and a peer's abort on its side channel */
        TRY(tether__rdma_poll_cqs(ep, &moved));
        for (int p = 0; p < ep->size; p++)
            if (p != ep->rank && ep->peers[p].fd >= 0)
                TRY(tether__rdma_side_read(ep, &ep->peers[p], p));
    }
    for (int p = 0; p < ep->size; p++)
        for (int k = 0; k < MAX_CABLES; k++) /* peers[rank]: empty queues */
            if (tether__rxq_stale(&ep->peers[p].unexpected[k], ep->passed, p, why, sizeof why))
                return tether__rdma_break(ep, TETHER_EMISMATCH, "rdma: %s", why);
    return TETHER_OK;
}

/* A message from src arrived for no receive: a stale one (core/passed.h) is EMISMATCH. */
static int stale(rdma_ep *ep, int src, tether__tag tag)
{
    char why[TETHER__ERRMSG_MAX];
    if (!tether__passed_stale(ep->passed, tag, src, why, sizeof why))
        return TETHER_OK;
    return tether__rdma_break(ep, TETHER_EMISMATCH, "rdma: %s", why);
}

/* The queue index of a message from h->src arriving on l: the lane its frames carry (l's own, or
 * a dead sibling's: failover.c), or the first (forwarded); -1: no such lane. */
static int lane_of(const rdma_ep *ep, const rdma_link *l, const rdma_hdr *h)
{
    int lane = (int)((h->flags & HDR_LANE_MASK) >> HDR_LANE_SHIFT);
    if ((int)h->src != l->peer)
        return lane == 0 ? 0 : -1;
    return lane < ep->peers[l->peer].nlinks ? lane : -1;
}

/* A message's first frame on l, for this rank or passing through: the ranks in range, and the
 * origin's last message on that lane ended. */
static int check_first(const rdma_ep *ep, rdma_link *l, const rdma_hdr *h)
{
    int transit = (int)h->dst != ep->rank, lane = lane_of(ep, l, h);
    if (h->src >= (uint32_t)ep->size || (int)h->src == ep->rank || h->dst >= (uint32_t)ep->size ||
        lane < 0 || (transit && (!ep->ring || lane != 0)) ||
        (!transit && (int)h->src != l->peer && links_to(ep, h->src)))
        return protocol_error((rdma_ep *)ep, l, "origin or destination rank out of place");
    if (ep->peers[h->src].arriving[lane].cur || ep->peers[h->src].arriving[lane].fwd)
        return protocol_error((rdma_ep *)ep, l, "a message began before the last one ended");
    return TETHER_OK;
}

/* A part's first frame for this rank: its posted receive, or a heap copy kept as unexpected. */
static int begin(rdma_ep *ep, rdma_link *l, const rdma_hdr *h)
{
    tether__rxmsg *m = NULL;
    uint64_t lo, n = h->msglen;
    int lane;
    TRY(check_first(ep, l, h));
    lane = lane_of(ep, l, h);
    if ((int)h->src == l->peer)
        part_bounds(h->msglen, lane, links_to(ep, h->src), &lo, &n);
    switch (tether__rxq_match(&ep->peers[h->src].posted[lane], h->tag, h->msglen, &m)) {
    case TETHER__MATCH_OK:
        break;
    case TETHER__MATCH_NONE:
        TRY(stale(ep, (int)h->src, h->tag));
        if (!tether__rxcache_admits(&ep->rxcache, h->msglen, h->tag))
            return tether__rdma_break(
                ep, TETHER_ENET,
                "rdma: rank %u announced a message of %llu bytes for rank %u "
                "that no receive has asked for; this rank buffers at most "
                "%llu",
                h->src, (unsigned long long)h->msglen, h->dst,
                (unsigned long long)tether__rxcache_limit(&ep->rxcache, h->tag));
        if (!(m = tether__rxcache_get_lazy(&ep->rxcache, n)))
            return tether__rdma_break(ep, TETHER_ENOMEM,
                                      "rdma: out of memory keeping %llu bytes "
                                      "from rank %u for rank %u",
                                      (unsigned long long)n, h->src, h->dst);
        m->tag = h->tag;
        m->msglen = h->msglen;
        tether__rxq_push(&ep->peers[h->src].unexpected[lane], m);
        break;
    case TETHER__MATCH_SIG:
    case TETHER__MATCH_LEN:
        return mismatch(ep, (int)h->src, h->tag, h->msglen, m->tag, m->msglen);
    }
    ep->peers[h->src].arriving[lane].cur = m;
    return TETHER_OK;
}

/* One part of receive r is in: the request is done with its last. */
static void recv_part_done(struct tether__req *r)
{
    if (--r->parts_left == 0)
        r->done = 1;
}

/* Where the message a frame on l belongs to is kept: its origin's, on its lane (NULL: no such
 * origin, which check_first then reports). */
static rdma_arriving *arriving(rdma_ep *ep, const rdma_link *l, const rdma_hdr *h)
{
    int lane = lane_of(ep, l, h);
    return h->src < (uint32_t)ep->size && lane >= 0 ? &ep->peers[h->src].arriving[lane] : NULL;
}

/* The receive part whose rx is m (posted receives are parts' rx). */
static rdma_part *part_of(tether__rxmsg *m)
{
    return (rdma_part *)(void *)((char *)m - offsetof(rdma_part, rx));
}

/* Receive part pt takes the peer's announced message id: its buffer registered for the peer's
 * WRITE, and a CTS owed (rv_replies). */
static int rv_accept(rdma_ep *ep, rdma_link *l, rdma_part *pt, int id)
{
    int rc = tether__rdma_reg(ep, l, pt->rx.buf, (size_t)pt->rx.len,
                              IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &pt->mr);
    if (rc) /* the sender waits for this buffer: the message cannot come as frames any more */
        return tether__rdma_break(ep, TETHER_ENET,
                                  "rdma: ibv_reg_mr of a %llu-byte receive buffer for rank %d's "
                                  "RDMA WRITE on %s failed: %s (%s=0 on every "
                                  "rank sends every message through the registered slots instead)",
                                  (unsigned long long)pt->rx.len, l->peer, l->dev->name,
                                  strerror(rc), TETHER__VAR(RDMA_WRITE_MIN));
    l->rv_in[id] = pt;
    l->cts_due |= 1u << id;
    return TETHER_OK;
}

/* The peer announces message id (RTS): its posted receive takes it, or it is kept as unexpected,
 * with no bytes, until one does (claim): the sender waits for the CTS, never this rank's memory. */
static int rv_request(rdma_ep *ep, rdma_link *l, const rdma_hdr *h, int id)
{
    rdma_peer *pe = &ep->peers[l->peer];
    tether__rxmsg *m = NULL;
    if (l->rv_in[id] || l->rv_unexp[id])
        return protocol_error(ep, l, "a rendezvous announced twice");
    switch (tether__rxq_match(&pe->posted[0], h->tag, h->msglen, &m)) {
    case TETHER__MATCH_OK:
        return rv_accept(ep, l, part_of(m), id);
    case TETHER__MATCH_NONE:
        TRY(stale(ep, (int)h->src, h->tag));
        if (!(m = tether__rxcache_get(&ep->rxcache, 0)))
            return tether__rdma_break(ep, TETHER_ENOMEM, "rdma: out of memory");
        m->tag = h->tag;
        m->msglen = m->len = h->msglen;
        tether__rxq_push(&pe->unexpected[0], m);
        l->rv_unexp[id] = m;
        return TETHER_OK;
    case TETHER__MATCH_SIG:
    case TETHER__MATCH_LEN:
        break;
    }
    return mismatch(ep, (int)h->src, h->tag, h->msglen, m->tag, m->msglen);
}

/* A rendezvous frame from l's peer (HDR_RV_MASK): an RTS, a CTS for a message of ours, or a FIN
 * (the bytes are in the receive's buffer: it completes, nothing copied). */
static int rv_in_frame(rdma_ep *ep, rdma_link *l, const rdma_hdr *h, const unsigned char *p,
                       size_t n)
{
    rdma_rv rv;
    rdma_part *pt;
    unsigned bit;
    if (n != sizeof rv || (int)h->src != l->peer || ep->uc || ep->ring ||
        ep->peers[l->peer].nlinks != 1)
        return protocol_error(ep, l, "a rendezvous frame out of place");
    memcpy(&rv, p, sizeof rv);
    if (rv.id >= RV_MAX)
        return protocol_error(ep, l, "a rendezvous id out of range");
    bit = 1u << rv.id;
    if (h->flags & HDR_RTS)
        return rv_request(ep, l, h, (int)rv.id);
    if (h->flags & HDR_CTS) {
        pt = l->rv_out[rv.id];
        if (!pt || pt->raddr || h->msglen != pt->len)
            return protocol_error(ep, l, "a CTS for no message announced");
        pt->raddr = rv.addr;
        pt->rkey = rv.rkey;
        l->go_due |= bit;
        return TETHER_OK;
    }
    pt = l->rv_in[rv.id];
    if (!pt || (l->cts_due & bit))
        return protocol_error(ep, l, "a FIN for no message given a buffer");
    tether__rdma_dereg(ep, &pt->mr);
    l->rv_in[rv.id] = NULL;
    ep->written += pt->rx.len;
    ep->written_msgs++;
    pt->rx.got = pt->rx.len;
    recv_part_done(pt->req);
    return TETHER_OK;
}

/* Our WRITE id is complete (RC: in the peer's memory): the send is done. */
static int rv_written(rdma_ep *ep, rdma_link *l, int id)
{
    rdma_part *pt = id < RV_MAX ? l->rv_out[id] : NULL;
    if (!pt)
        return tether__rdma_break(ep, TETHER_EINTERNAL,
                                  "rdma: a WRITE completion for no rendezvous (id %d, rank %d)", id,
                                  l->peer);
    tether__rdma_dereg(ep, &pt->mr);
    l->rv_out[id] = NULL;
    if (--pt->req->parts_left == 0)
        pt->req->done = 1;
    return TETHER_OK;
}

/* A frame of a message for this rank. */
static int take(rdma_ep *ep, rdma_link *l, const rdma_hdr *h, const unsigned char *p, size_t n)
{
    rdma_arriving *a = arriving(ep, l, h);
    tether__rxmsg *m;
    if (h->flags & HDR_RV_MASK)
        return rv_in_frame(ep, l, h, p, n);
    if (h->offset == 0)
        TRY(begin(ep, l, h));
    m = a ? a->cur : NULL;
    if (!m || h->offset != m->got || h->msglen != m->msglen || n > m->len - m->got)
        return protocol_error(ep, l, "a frame out of its message's order or bounds");
    for (size_t done = 0; done < n;) { /* a lazy buffer grows as the frames come */
        uint64_t k = n - done;
        if (tether__rxmsg_reserve(m, &k) < 0)
            return tether__rdma_break(ep, TETHER_ENOMEM,
                                      "rdma: out of memory keeping %llu bytes of a %llu-byte "
                                      "message from rank %u for rank %u",
                                      (unsigned long long)(m->got + k), (unsigned long long)m->len,
                                      h->src, h->dst);
        memcpy(m->buf + m->got, p + done, (size_t)k);
        m->got += k;
        done += (size_t)k;
    }
    ep->copied += n;
    if (ep->write_min && h->msglen >= ep->write_min)
        ep->copied_big += n;
    if (m->got < m->len)
        return TETHER_OK;
    a->cur = NULL;
    if (m->req) {
        recv_part_done(m->req);
        if (m->heap) /* an unexpected message claimed while it was still arriving */
            tether__rxcache_put(&ep->rxcache, m);
    }
    return TETHER_OK;
}

/* The first frame of a message for another rank, arriving on from: kept by its origin until its
 * last frame has gone on (a record with no bytes: the frames carry them). */
static int pass_begin(rdma_ep *ep, rdma_link *from, const rdma_hdr *h)
{
    int src = (int)h->src, dst = (int)h->dst;
    rdma_link *next;
    struct tether__req *r;
    TRY(check_first(ep, from, h));
    next = tether__rdma_hop(ep, dst);
    next = next ? tether__rdma_carrier(ep, next) : NULL;
    if (!next || next->peer == from->peer || ep->peers[next->peer].eof)
        return tether__rdma_break(ep, TETHER_EPEER,
                                  "rdma: rank %d cannot pass on a message from "
                                  "rank %d to rank %d: %s",
                                  ep->rank, src, dst,
                                  next && ep->peers[next->peer].eof
                                      ? "the next rank on the way has left the ring"
                                      : "it came from the way it should go (ranks disagree on the "
                                        "ring: check every rank reads the same device matrix)");
    if (!(r = calloc(1, sizeof *r)))
        return tether__rdma_break(ep, TETHER_ENOMEM,
                                  "rdma: rank %d: out of memory passing on a "
                                  "message from rank %d to rank %d",
                                  ep->rank, src, dst);
    *r = (struct tether__req){.is_send = 1,
                              .peer = dst,
                              .len = (size_t)h->msglen,
                              .tag = h->tag,
                              .src = (uint32_t)src,
                              .dst = (uint32_t)dst,
                              .nparts = 1,
                              .parts_left = 1};
    r->part[0] = (rdma_part){.req = r, .len = (size_t)h->msglen};
    ep->peers[src].arriving[0].fwd = r;
    return TETHER_OK;
}

#define PASS_WAIT 1 /* pass(): the onward link cannot take the frame yet */

/* A frame of a message for another rank: sent on at once, unchanged but for the link's own
 * fields, between the frames of the onward link's own messages, as soon as that link has a credit
 * and a send slot (its own frames leave a credit for this: own_spare). */
static int pass(rdma_ep *ep, rdma_link *from, const rdma_hdr *h, const unsigned char *p, size_t n)
{
    rdma_arriving *a = arriving(ep, from, h);
    struct tether__req *r = a ? a->fwd : NULL;
    rdma_part *pt;
    rdma_link *way, *next;
    rdma_hdr out;
    if (h->offset == 0 && !(r && r->part[0].framed == 0)) { /* not its first frame, held before */
        TRY(pass_begin(ep, from, h));
        r = a->fwd; /* pass_begin checked the origin: a is not NULL */
    }
    pt = r ? &r->part[0] : NULL;
    if (!r || h->offset != pt->framed || h->msglen != r->len || n > r->len - pt->framed ||
        h->dst != r->dst)
        return protocol_error(ep, from, "a frame out of its message's order or bounds");
    way = tether__rdma_hop(ep, (int)r->dst);
    next = tether__rdma_carrier(ep, way);
    if (!next)
        return tether__rdma_break(
            ep, TETHER_ENET, "rdma: rank %d has no cable left towards rank %u", ep->rank, r->dst);
    /* The way's cable left: its frames the peer did not take go again on next first (failover.c),
     * and some may be this message's, so its next frame waits behind them. */
    if (next != way && (!way->failed_over || way->refeed != way->tx_seq))
        return PASS_WAIT;
    if (next->credits <= 0 || next->nfree_send == 0 || next->win.rewinding) {
        if (next->credits <= 0)
            tether__rdma_starve(ep, next, tether__now_us());
        return PASS_WAIT;
    }
    out = header(next, FRAME_DATA, r, h->offset);
    TRY(post_frame(ep, next, &out, p, n));
    next->credits--;
    pt->framed += n;
    if (pt->framed == pt->len) {
        a->fwd = NULL;
        free(r);
    }
    return TETHER_OK;
}

/* Whether l's next held frame must wait: it came after the peer's fence (a lane moved back to a
 * cable that came back), and a sibling still holds frames taken before it. A frame of a lane can
 * be taken on the carrier before the cable came back, and its next on the cable: each link's frames
 * are handled in order, but a frame held back (passing through, no room onward) would let the other
 * link's overtake it, out of its message's order. (A cable that leaves holds no such frame: those
 * it took but had not handled are dropped and come again on the carrier, failover.c.) */
static int fenced(rdma_ep *ep, const rdma_link *l)
{
    rdma_peer *pe = &ep->peers[l->peer];
    if (!pe->fenced || l->run_n < l->fence)
        return 0;
    for (int k = 0; k < pe->nlinks; k++)
        if (pe->link[k].run_n < pe->link[k].fence)
            return 1;
    pe->fenced = 0; /* every frame from before it handled */
    return 0;
}

/* Handle l's data frames in arrival order, reposting each slot once its frame is done with, until
 * a frame passing through finds no room onward: it and those behind it keep their slots. */
static int in_run(rdma_ep *ep, rdma_link *l)
{
    while (l->nheld && !fenced(ep, l)) {
        int slot = l->held[l->held_head];
        const unsigned char *p = tether__rdma_slot(l, slot);
        size_t len = (size_t)l->held_len[l->held_head];
        rdma_hdr h;
        int rc;
        memcpy(&h, p, sizeof h);
        rc = (int)h.dst == ep->rank ? take(ep, l, &h, p + sizeof h, len - sizeof h)
                                    : pass(ep, l, &h, p + sizeof h, len - sizeof h);
        if (rc == PASS_WAIT)
            return TETHER_OK;
        TRY(rc);
        l->held_head = (l->held_head + 1) % DATA_SLOTS;
        l->nheld--;
        l->run_n++;
        l->pending++;
        l->released++;
        if (!l->down || l->rejoin == REJOIN_CONNECTED) /* a dead QP's receives are done with */
            TRY(tether__rdma_post_recv(ep, l, slot));
    }
    return TETHER_OK;
}

/* A data frame in slot: queued behind l's unhandled ones, then run. */
static int data_in(rdma_ep *ep, rdma_link *l, int slot, uint32_t byte_len)
{
    if (l->nheld == DATA_SLOTS)
        return protocol_error(ep, l, "more data frames than credits");
    if (l->fresh) { /* the first since it came back: its lane's frames on the carrier go first */
        l->fresh = 0;
        tether__rdma_fence(ep, l);
    }
    l->taken_n++;
    l->held[(l->held_head + l->nheld) % DATA_SLOTS] = slot;
    l->held_len[(l->held_head + l->nheld) % DATA_SLOTS] = (int)byte_len;
    l->nheld++;
    return in_run(ep, l);
}

/* What every frame's header tells, even a dropped one's (the counts only grow): the credits and
 * control receives the peer has freed, and with them the kept frames it has handled. */
static void credits_in(rdma_ep *ep, rdma_link *l, const rdma_hdr *h)
{
    int32_t freed = (int32_t)(h->credits - l->peer_released);
    uint32_t seen = h->ctrl_seen - l->ctrl_acked;
    if (freed > 0) {
        l->credits += freed;
        l->peer_released = h->credits;
        tether__rdma_fed(l);
        tether__rdma_free_kept(ep, l);
        tether__rdma_repay(ep, l, 0);
    }
    if ((int32_t)seen > 0) {
        l->ctrl_acked = h->ctrl_seen;
        l->ctrl_out = seen < l->ctrl_out ? l->ctrl_out - seen : 0;
    }
}

static int frame_in(rdma_ep *ep, rdma_link *l, int slot, uint32_t byte_len)
{
    const unsigned char *p = tether__rdma_slot(l, slot);
    rdma_hdr h;
    if (byte_len < sizeof h)
        return protocol_error(ep, l, "shorter than a header");
    memcpy(&h, p, sizeof h);
    if (h.type != FRAME_DATA && h.type != FRAME_CREDIT)
        return protocol_error(ep, l, "unknown frame type");
    l->frames_in++; /* the cable carries (silence.c) */
    credits_in(ep, l, &h);
    TRY(tether__rdma_acked(ep, l, &h));
    if (h.type == FRAME_CREDIT) {
        l->ctrl_seen++;
        if (h.flags & HDR_WANT) /* its frames wait for our credits: tell them now */
            l->win.ack_owed = 1;
        tether__rdma_behind(ep, l, &h);
        return tether__rdma_post_recv(ep, l, slot);
    }
    if (h.seq != l->rx_seq && ep->uc)
        return tether__rdma_out_of_order(ep, l, slot, &h);
    if (h.seq != l->rx_seq)
        return tether__rdma_break(ep, TETHER_ENET,
                                  "rdma: frame %u from rank %d on %s arrived where "
                                  "frame %u was due: a message was lost or reordered on the way "
                                  "though RC QPs retransmit, so its data is not used",
                                  h.seq, l->peer, l->dev->name, l->rx_seq);
    l->rx_seq++;
    tether__rdma_taken(ep, l);
    tether__rdma_probed(ep, l, &h);
    return data_in(ep, l, slot, byte_len);
}

static int completion(rdma_ep *ep, const struct ibv_wc *wc)
{
    int peer = (int)(wc->wr_id >> 32), slot = (int)(wc->wr_id & 0xffff);
    int lane = (int)(wc->wr_id >> 16) & 0xff;
    unsigned kind = (unsigned)(wc->wr_id >> 24) & 0xf, gen = (unsigned)(wc->wr_id >> 28) & 0xf;
    rdma_peer *pe;
    rdma_link *l;
    if (peer < 0 || peer >= ep->size || peer == ep->rank || lane >= ep->peers[peer].nlinks)
        return tether__rdma_break(ep, TETHER_EINTERNAL,
                                  "rdma: a completion for unknown work "
                                  "request %llx",
                                  (unsigned long long)wc->wr_id);
    pe = &ep->peers[peer];
    l = &pe->link[lane];
    /* what it took before it went down is final (failover.c), a replaced QP's work is gone, and
     * a fresh one's is not yet ours until it is connected (rejoin.c) */
    if (gen != (unsigned)(l->gen & 0xf) || (l->down && l->rejoin != REJOIN_CONNECTED))
        return TETHER_OK;
    if (wc->status != IBV_WC_SUCCESS) {
        int gone = wc->status == IBV_WC_RETRY_EXC_ERR;
        char why[96];
        /* A peer that closed normally said bye on its side channel before its QP went away. */
        TRY(tether__rdma_side_read(ep, pe, peer));
        if (pe->bye) /* it closed normally: frames still on their way to it may fail */
            return TETHER_OK;
        snprintf(why, sizeof why, "QP error: %s", ep->ibv.wc_status_str(wc->status));
        if (pe->nlinks > 1) /* the job goes on over the others, if any is left */
            return tether__rdma_link_down(ep, l, why);
        return tether__rdma_break(
            ep, gone ? TETHER_EPEER : TETHER_ENET,
            "rdma: %s rank %d on %s "
            "failed: %s (status %d, vendor error 0x%x)%s",
            kind == RDMA_WR_SEND    ? "a send to"
            : kind == RDMA_WR_WRITE ? "an RDMA WRITE to"
                                    : "a receive from",
            l->peer, l->dev->name, ep->ibv.wc_status_str(wc->status), (int)wc->status,
            wc->vendor_err, gone ? "; the peer or the link is gone: see the peer's output" : "");
    }
    atomic_fetch_add_explicit(&ep->moved, 1, memory_order_relaxed);
    if (kind == RDMA_WR_SEND) {
        tether__rdma_slot_unref(l, slot);
        return TETHER_OK;
    }
    if (kind == RDMA_WR_WRITE)
        return rv_written(ep, l, slot);
    return frame_in(ep, l, slot, wc->byte_len);
}

int tether__rdma_poll_cqs(rdma_ep *ep, int *moved)
{
    struct ibv_wc wc[POLL_BATCH];
    int64_t now;
    if (ep->err)
        return ep->err;
    for (int d = 0; d < ep->ndev; d++) {
        int n;
        do {
            n = ibv_poll_cq(ep->devs[d].cq, POLL_BATCH, wc);
            if (n < 0)
                return tether__rdma_break(ep, TETHER_ENET,
                                          "rdma: ibv_poll_cq(%s) failed: the CQ is "
                                          "broken (overrun?)",
                                          ep->devs[d].name);
            for (int i = 0; i < n; i++)
                TRY(completion(ep, &wc[i]));
            *moved += n;
        } while (n == POLL_BATCH);
    }
    for (RDMA_EACH_LINK(ep, l)) /* frames held back first: passing frames go before own ones */
        TRY(in_run(ep, l));
    now = ep->keeps ? tether__now_us() : 0;
    if (ep->keeps) { /* before the pushes: a silent link's frames, and a link back, go elsewhere */
        TRY(tether__rdma_silence_check(ep, now));
        TRY(tether__rdma_rejoin_tick(ep, now));
    }
    for (RDMA_EACH_LINK(ep, l)) {
        TRY(push_at(ep, l, now));
        TRY(tether__rdma_gone_check(ep, l));
    }
    if (ep->loop)
        TRY(tether__rdma_stranded_check(ep));
    return ep->keeps ? quiet(ep, now, &ep->ack_due_ms) : TETHER_OK;
}

/* Match part pt of a receive from peer against what came unexpected on its link. */
static int claim(rdma_ep *ep, int peer, int lane, rdma_part *pt)
{
    tether__rxmsg *m = NULL;
    rdma_peer *pe = &ep->peers[peer];
    switch (tether__rxq_match(&pe->unexpected[lane], pt->rx.tag, pt->rx.msglen, &m)) {
    case TETHER__MATCH_NONE:
        tether__rxq_push(&pe->posted[lane], &pt->rx);
        return pe->nlinks ? tether__rdma_gone_check(ep, &pe->link[lane])
                          : tether__rdma_stranded_check(ep);
    case TETHER__MATCH_SIG:
    case TETHER__MATCH_LEN:
        return mismatch(ep, peer, m->tag, m->msglen, pt->rx.tag, pt->rx.msglen);
    case TETHER__MATCH_OK:
        break;
    }
    for (int id = 0; pe->nlinks == 1 && id < RV_MAX; id++) /* announced: the CTS may go now */
        if (pe->link[0].rv_unexp[id] == m) {
            pe->link[0].rv_unexp[id] = NULL;
            tether__rxcache_put(&ep->rxcache, m);
            TRY(rv_accept(ep, &pe->link[0], pt, id));
            return tether__rdma_push(ep, &pe->link[0]);
        }
    if (m->got)
        memcpy(pt->rx.buf, m->buf, (size_t)m->got);
    if (m->got == m->len) {
        tether__rxcache_put(&ep->rxcache, m);
        recv_part_done(pt->req);
    } else { /* still arriving (it is a link's cur): the rest goes straight to the user's buffer */
        tether__rxmsg_redirect(m, pt->rx.buf);
        m->req = pt->req;
    }
    return TETHER_OK;
}

int tether__rdma_recv(rdma_ep *ep, struct tether__req *r, unsigned char *buf)
{
    int nlinks = links_to(ep, r->peer) ? links_to(ep, r->peer) : 1, lane[MAX_CABLES];
    r->nparts = 0;
    for (int k = 0; k < nlinks; k++) {
        uint64_t lo, n;
        if (!part_bounds(r->len, k, nlinks, &lo, &n))
            continue;
        lane[r->nparts] = k;
        r->part[r->nparts++] = (rdma_part){
            .req = r,
            .lo = (size_t)lo,
            .len = (size_t)n,
            .rx = {.tag = r->tag, .msglen = r->len, .len = n, .buf = buf + lo, .req = r}};
    }
    r->parts_left = r->nparts; /* all counted first: a part may finish as soon as it is claimed */
    for (int i = 0; i < r->nparts; i++)
        TRY(claim(ep, r->peer, lane[i], &r->part[i]));
    return TETHER_OK;
}

/* Arm every CQ, then look once more, so a completion that came before the arm is not slept on. */
int tether__rdma_arm(rdma_ep *ep, int *moved)
{
    for (int d = 0; d < ep->ndev; d++) {
        int rc = ibv_req_notify_cq(ep->devs[d].cq, 0);
        if (rc)
            return tether__rdma_break(ep, TETHER_ENET, "rdma: ibv_req_notify_cq(%s) failed: %s",
                                      ep->devs[d].name, strerror(rc));
    }
    return tether__rdma_poll_cqs(ep, moved);
}
