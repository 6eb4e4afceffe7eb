/* backends/rdma/retransmit.c - UC's answer to loss: data frames kept until acknowledged, sent again
 * from the first missing one (go-back-N) when the receiver reports a gap, and duplicates dropped by
 * number (rdma_impl.h: Loss). RC's NIC resends by itself: nothing is resent there, and RC frames
 * leave their send slots at their completion, except on a link whose peer has other links: those
 * keep them until acknowledged too, for a failover (failover.c).
 *
 * A gap shows only when a later frame arrives. When none does (the last frames of a call lost, or
 * their acknowledgement late) the oldest unacknowledged frame goes again alone, as a probe, after
 * TETHER_RDMA_RESEND_MS, or 4 smoothed round trips of the link (measured from frames sent once, as
 * in Karn's algorithm) and at least RESEND_MIN_US, doubled for each timeout in a row with nothing
 * acknowledged. The receiver answers a probe at once with a NACK naming the frame it waits for; the
 * link keeps its order, so every frame from that one up to the probe's time was lost and goes
 * again. A late acknowledgement then costs one duplicate, not a window of them (duplicates take
 * receives until reposted, so a burst of them would make more frames lost). A taken frame is
 * acknowledged by the next frame going back, or alone after ACK_DELAY_US. A resend goes in
 * order: a frame whose last copy is still being sent holds those behind it back, and no new frame
 * goes before them. */
#include <time.h>

#include "cables.h"
#include "device.h"
#include "post.h"
#include "rdma_impl.h"
#include "retransmit.h"
#include "state.h"

#define RESEND_MIN_US 5000    /* the adaptive wait's floor: a descheduled peer is not a loss */
#define RESEND_FIRST_US 20000 /* before the link's first round trip is measured */
#define RESEND_MAX_US 1000000 /* backoff's ceiling */
#define BACKOFF_MAX 8
/* How long a taken frame's acknowledgement waits for a frame going back to carry it: well within
 * RESEND_MIN_US, so no probe goes for it, and long enough that a reply in a ping-pong carries it
 * (a standalone one costs the peer a wake-up). */
#define ACK_DELAY_US 1000
/* RC: nothing is resent, so an acknowledgement is only wanted for a failover's bookkeeping (and at
 * close, and before a cable that came back carries its lane again): it waits longer for a frame
 * going back, which costs no control frame. */
#define RC_ACK_DELAY_US 10000

static rdma_kept *kept(rdma_link *l, uint32_t seq)
{
    return &l->win.kept[seq % DATA_SLOTS]; /* 2^32 is a multiple of DATA_SLOTS: wraps align */
}

/* How long the oldest unacknowledged frame waits before it goes again, after backoff timeouts in
 * a row. */
static int64_t wait_at(const rdma_ep *ep, const rdma_link *l, int backoff)
{
    int64_t us = ep->resend_us                        ? ep->resend_us
                 : l->win.srtt_us == 0                ? RESEND_FIRST_US
                 : 4 * l->win.srtt_us < RESEND_MIN_US ? RESEND_MIN_US
                                                      : 4 * l->win.srtt_us;
    int64_t cap = ep->resend_us > RESEND_MAX_US ? ep->resend_us : RESEND_MAX_US;
    us <<= backoff;
    return us < cap ? us : cap;
}

static int64_t wait_us(const rdma_ep *ep, const rdma_link *l)
{
    return wait_at(ep, l, l->win.backoff);
}

int64_t tether__rdma_probes_us(const rdma_ep *ep, const rdma_link *l, int probes)
{
    int64_t us = 0;
    for (int b = 0; b < probes; b++)
        us += wait_at(ep, l, b < BACKOFF_MAX ? b : BACKOFF_MAX);
    return us;
}

void tether__rdma_keep(rdma_ep *ep, rdma_link *l, uint32_t seq, int slot, int len)
{
    if (!tether__rdma_keeps(ep, l))
        return;
    *kept(l, seq) = (rdma_kept){.slot = slot, .len = len, .sent_us = tether__now_us()};
    l->slot_refs[slot - RECV_SLOTS]++;
}

void tether__rdma_free_kept(rdma_ep *ep, rdma_link *l)
{
    rdma_window *w = &l->win;
    /* the older of the two counts: a frame taken but held back (passing through, no room onward)
     * is still the sender's to send again if the cable dies (failover.c) */
    uint32_t upto = (int32_t)(l->peer_released - w->acked) < 0 ? l->peer_released : w->acked;
    if (!tether__rdma_keeps(ep, l))
        return;
    for (; (int32_t)(upto - w->freed) > 0; w->freed++)
        tether__rdma_slot_unref(l, kept(l, w->freed)->slot);
}

/* A NACK for frame from: go back to it, unless a resend is under way (it covers the gap), that
 * frame is a probe still on its way (the NACK is about its older copy), or the NACK answers a
 * probe (answer) and from went after it: then nothing was lost, the acknowledgement was late. */
static void nacked(rdma_link *l, uint32_t from, int answer, int64_t now)
{
    rdma_window *w = &l->win;
    int64_t rtt = w->srtt_us ? w->srtt_us : RESEND_MIN_US;
    if (from == l->tx_seq || w->rewinding ||
        (w->probing && from == w->probe && now - kept(l, from)->sent_us < rtt) ||
        (answer && (int32_t)(from - w->probe_end) >= 0))
        return;
    w->probing = 0;
    w->rewinding = 1;
    w->rewind = from;
}

int tether__rdma_acked(rdma_ep *ep, rdma_link *l, const rdma_hdr *h)
{
    rdma_window *w = &l->win;
    int64_t now;
    if (!tether__rdma_keeps(ep, l))
        return TETHER_OK;
    if ((int32_t)(h->ack - w->acked) <= 0 && !(h->flags & HDR_NACK))
        return TETHER_OK;
    if ((int32_t)(h->ack - l->tx_seq) > 0)
        return tether__rdma_break(ep, TETHER_ENET,
                                  "rdma: rank %d acknowledged frame %u on %s, but only %u were "
                                  "sent: is it running a different tether version?",
                                  l->peer, h->ack, l->dev->name, l->tx_seq);
    now = tether__now_us();
    for (; (int32_t)(h->ack - w->acked) > 0; w->acked++) {
        rdma_kept *k = kept(l, w->acked);
        if (!k->resent) { /* a round-trip sample: smoothed over 8 */
            int64_t rtt = now - k->sent_us;
            w->srtt_us = w->srtt_us ? (7 * w->srtt_us + rtt) / 8 : rtt;
        }
        w->backoff = 0;
        w->probing = 0;
    }
    tether__rdma_free_kept(ep, l);
    if (w->rewinding && (int32_t)(w->rewind - w->acked) < 0)
        w->rewind = w->acked;
    if ((h->flags & HDR_NACK) && h->ack == w->acked)
        nacked(l, h->ack, (h->flags & HDR_PROBE) != 0, now);
    return TETHER_OK;
}

/* The peer should learn it skipped frames: once per frame awaited (a lost NACK: the timeout). */
static void owe_nack(rdma_link *l)
{
    if (l->win.nacked != l->rx_seq + 1)
        l->win.nack_owed = 1;
}

void tether__rdma_probed(rdma_ep *ep, rdma_link *l, const rdma_hdr *h)
{
    if (ep->uc && (h->flags & HDR_PROBE))
        l->win.nack_owed = NACK_ANSWER; /* at once, even if a NACK for that frame went before */
}

int tether__rdma_out_of_order(rdma_ep *ep, rdma_link *l, int slot, const rdma_hdr *h)
{
    if ((int32_t)(h->seq - l->rx_seq) < 0) { /* taken before: our acknowledgement got lost */
        ep->dups++;
        l->win.ack_owed = 1;
        tether__rdma_probed(ep, l, h);
    } else {
        ep->gaps++;
        owe_nack(l);
    }
    return tether__rdma_post_recv(ep, l, slot);
}

void tether__rdma_behind(rdma_ep *ep, rdma_link *l, const rdma_hdr *h)
{
    if (ep->uc && (int32_t)(h->seq - l->rx_seq) > 0)
        owe_nack(l);
}

/* Frame seq once more, flagged flags (a NACK it carried first is old news); 1: its last copy is
 * still being sent, so it cannot go yet. */
static int again(rdma_ep *ep, rdma_link *l, uint32_t seq, uint32_t flags, int64_t now_us)
{
    rdma_kept *k = kept(l, seq);
    rdma_hdr *h = (rdma_hdr *)tether__rdma_slot(l, k->slot);
    if (l->slot_refs[k->slot - RECV_SLOTS] > 1)
        return 1;
    h->flags = (h->flags & HDR_LANE_MASK) | flags;
    TRY(tether__rdma_post_slot(ep, l, k->slot, (size_t)k->len));
    l->slot_refs[k->slot - RECV_SLOTS]++;
    k->sent_us = now_us;
    k->resent = 1;
    ep->resent++;
    return 0;
}

int tether__rdma_resend(rdma_ep *ep, rdma_link *l, int64_t now_us)
{
    rdma_window *w = &l->win;
    int rc;
    if (!ep->uc)
        return 0;
    if (w->acked == l->tx_seq) {
        w->rewinding = w->probing = 0;
        return 0;
    }
    if (!w->rewinding && now_us - kept(l, w->acked)->sent_us >= wait_us(ep, l)) {
        if ((rc = again(ep, l, w->acked, HDR_PROBE, now_us)) != 0)
            return rc < 0 ? rc : 0;
        w->probing = 1;
        w->probe = w->acked;
        w->probe_end = l->tx_seq;
        if (w->backoff < BACKOFF_MAX)
            w->backoff++;
    }
    for (; w->rewinding && w->rewind != l->tx_seq; w->rewind++)
        if ((rc = again(ep, l, w->rewind, 0, now_us)) != 0)
            return rc;
    w->rewinding = 0;
    return 0;
}

int tether__rdma_ctrl_room(rdma_ep *ep, rdma_link *l, int64_t now_us)
{
    if (ep->uc && l->ctrl_out >= CTRL_SLOTS && now_us - l->ctrl_us >= wait_us(ep, l))
        l->ctrl_out = 0; /* unseen this long: lost, and a lost SEND took no receive */
    return l->ctrl_out < CTRL_SLOTS;
}

void tether__rdma_taken(rdma_ep *ep, rdma_link *l)
{
    if (tether__rdma_keeps(ep, l) && l->win.ack_told == l->rx_seq - 1) /* the first untold one */
        l->win.taken_us = tether__now_us();
}

int64_t tether__rdma_ack_due(const rdma_ep *ep, const rdma_link *l, int64_t now_us)
{
    int64_t left;
    /* RC keeps frames only for a failover: one acknowledgement alone at a time (a control frame
     * holds a receive of the peer's until a frame back says it was seen, and a peer that sends
     * nothing back must still get our credits), the rest ride the next frame */
    if (!tether__rdma_keeps(ep, l) || (!ep->uc && l->ctrl_out) ||
        (!l->win.ack_owed && !l->win.nack_owed && l->win.ack_told == l->rx_seq))
        return -1;
    left = l->win.taken_us + (ep->uc ? ACK_DELAY_US : RC_ACK_DELAY_US) - now_us;
    return l->win.ack_owed || l->win.nack_owed || left < 0 ? 0 : left;
}

/* A receiver returns credits in the header of every frame going back, or alone in a control
 * frame when none goes; on UC that control frame can be lost, and then nothing tells them again:
 * every rank of a ring holding frames that wait for the next one's credits, and every next one
 * holding none, stalled for good (the campaign's rdma-uc-ring all_to_all). So a link whose frames
 * wait for credits asks for them (HDR_WANT) after the resend wait of its link, doubling while
 * none come, like TCP's zero-window probe; the peer answers at once with its count. */
int64_t tether__rdma_credit_due(const rdma_ep *ep, const rdma_link *l, int64_t now_us)
{
    int64_t left;
    if (!ep->uc || !l->starved)
        return -1;
    left = l->starved_us +
           wait_at(ep, l, l->credit_probes < BACKOFF_MAX ? l->credit_probes : BACKOFF_MAX) - now_us;
    return left < 0 ? 0 : left;
}

void tether__rdma_starve(const rdma_ep *ep, rdma_link *l, int64_t now_us)
{
    if (ep->uc && !l->starved) {
        l->starved = 1;
        l->starved_us = now_us;
    }
}

void tether__rdma_fed(rdma_link *l)
{
    l->starved = l->credit_probes = 0;
}

int tether__rdma_sending(const rdma_ep *ep, const rdma_link *l)
{
    int busy = SEND_SLOTS - l->nfree_send;
    if (ep->uc || !tether__rdma_keeps(ep, l))
        return busy;
    for (uint32_t s = l->win.freed; s != l->tx_seq; s++) /* kept, and its send completed */
        busy -= l->slot_refs[l->win.kept[s % DATA_SLOTS].slot - RECV_SLOTS] == 1;
    return busy;
}

void tether__rdma_forget(rdma_ep *ep, rdma_link *l)
{
    if (!tether__rdma_keeps(ep, l))
        return;
    for (; l->win.freed != l->tx_seq; l->win.freed++)
        tether__rdma_slot_unref(l, kept(l, l->win.freed)->slot);
    l->win.acked = l->tx_seq;
    l->win.rewinding = l->win.probing = 0;
}
