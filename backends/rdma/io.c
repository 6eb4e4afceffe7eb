/* backends/rdma/io.c - the data path: frames out under credits, completions in, matching, credit returns.
 *
 * A send is cut into frames of at most SLOT_PAYLOAD bytes, copied into send slots and posted, one
 * frame per credit; it is done once its last frame is posted (the slots hold the bytes). A frame
 * that comes in is checked (status, sequence), its payload copied to the matching receive or kept
 * as unexpected, and its slot reposted at once, which earns the peer a credit back. A SEND is as
 * small as its payload plus the header, and inline when the device allows. */
#include <stdlib.h>
#include <string.h>

#include "rdma_impl.h"

#define WR_RECV 1u
#define WR_SEND 2u
#define POLL_BATCH 16

static uint64_t wr_id(int peer, unsigned kind, int slot)
{
    return (uint64_t)peer << 32 | (uint64_t)kind << 24 | (uint32_t)slot;
}

int tether__rdma_post_recv(rdma_ep *ep, rdma_link *l, int slot)
{
    struct ibv_sge sge = {.addr = (uintptr_t)tether__rdma_slot(l, slot), .length = SLOT_SIZE,
                          .lkey = l->dev->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = wr_id(l->peer, WR_RECV, slot), .sg_list = &sge,
                             .num_sge = 1};
    struct ibv_recv_wr *bad = NULL;
    int rc = ibv_post_recv(l->qp, &wr, &bad);
    if (rc)
        return tether__rdma_break(ep, TETHER_ENET, "rdma: ibv_post_recv for rank %d on %s failed: "
                                  "%s", l->peer, l->dev->name, strerror(rc));
    return TETHER_OK;
}

/* The next frame's header; it hands the peer the credits we owe. */
static rdma_hdr header(rdma_link *l, uint32_t type, tether_tag tag, uint64_t msglen, uint64_t off)
{
    rdma_hdr h = {.type = type, .seq = l->tx_seq, .credits = l->pending,
                  .ctrl_seen = l->ctrl_seen, .tag = tag, .msglen = msglen, .offset = off};
    l->pending = 0;
    return h;
}

static int post_frame(rdma_ep *ep, rdma_link *l, const rdma_hdr *h, const void *payload, size_t n)
{
    int slot = l->free_send[--l->nfree_send];
    unsigned char *p = tether__rdma_slot(l, slot);
    size_t len = sizeof *h + n;
    struct ibv_sge sge = {.addr = (uintptr_t)p, .length = (uint32_t)len, .lkey = l->dev->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = wr_id(l->peer, WR_SEND, slot), .sg_list = &sge,
                             .num_sge = 1, .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED |
                                           (len <= l->max_inline ? IBV_SEND_INLINE : 0)};
    struct ibv_send_wr *bad = NULL;
    int rc;
    memcpy(p, h, sizeof *h);
    if (n)
        memcpy(p + sizeof *h, payload, n);
    if ((rc = ibv_post_send(l->qp, &wr, &bad)) != 0)
        return tether__rdma_break(ep, TETHER_ENET, "rdma: ibv_post_send of %zu bytes to rank %d "
                                  "on %s failed: %s", len, l->peer, l->dev->name, strerror(rc));
    l->tx_seq++;
    return TETHER_OK;
}

int tether__rdma_push(rdma_ep *ep, rdma_link *l)
{
    static const tether_tag none;
    while (l->sendq && l->credits > 0 && l->nfree_send > 0) {
        struct tether_req *r = l->sendq;
        size_t n = r->len - r->framed < SLOT_PAYLOAD ? r->len - r->framed : SLOT_PAYLOAD;
        rdma_hdr h = header(l, FRAME_DATA, r->tag, r->len, r->framed);
        TRY(post_frame(ep, l, &h, r->buf + r->framed, n));
        l->credits--;
        r->framed += n;
        r->started = 1;
        if (r->framed == r->len) {
            l->sendq = r->qnext;
            if (!l->sendq)
                l->sendq_tail = NULL;
            r->done = 1;
        }
    }
    /* Returns pile up with no data going back: send them alone, in a receive kept for that. */
    if (l->pending >= DATA_SLOTS / 2 && l->ctrl_sent - l->ctrl_acked < CTRL_SLOTS &&
        l->nfree_send > 0 && !l->bye) {
        rdma_hdr h = header(l, FRAME_CREDIT, none, 0, 0);
        TRY(post_frame(ep, l, &h, NULL, 0));
        l->ctrl_sent++;
    }
    return TETHER_OK;
}

static int protocol_error(rdma_ep *ep, const rdma_link *l, const char *what)
{
    return tether__rdma_break(ep, TETHER_ENET, "rdma: rank %d sent a malformed frame on %s (%s): "
                              "is it running a different tether version?", l->peer, l->dev->name,
                              what);
}

static int mismatch(rdma_ep *ep, const rdma_link *l, tether_tag got, uint64_t got_len,
                    tether_tag want, uint64_t want_len)
{
    return tether__rdma_break(ep, TETHER_EMISMATCH,
                              "rank %d sent %llu bytes with signature %08x for group %08x seq %08x "
                              "step %u, but rank %d expects %llu bytes with signature %08x (step "
                              "%u): the ranks called different collectives or with different "
                              "counts, dtypes, ops or roots", l->peer,
                              (unsigned long long)got_len, got.sig, got.group, got.seq, got.step,
                              ep->rank, (unsigned long long)want_len, want.sig, want.step);
}

/* A message's first frame: its posted receive, or a heap copy kept as unexpected. */
static int begin(rdma_ep *ep, rdma_link *l, const rdma_hdr *h)
{
    tether__rxmsg *m = NULL;
    if (l->cur)
        return protocol_error(ep, l, "a message began before the last one ended");
    switch (tether__rxq_match(&l->posted, h->tag, h->msglen, &m)) {
    case TETHER__MATCH_OK:
        break;
    case TETHER__MATCH_NONE:
        if (h->msglen > SIZE_MAX - sizeof *m - 1 || !(m = calloc(1, sizeof *m + h->msglen + 1)))
            return tether__rdma_break(ep, TETHER_ENOMEM, "rdma: out of memory keeping %llu bytes "
                                      "from rank %d until their receive is posted",
                                      (unsigned long long)h->msglen, l->peer);
        m->buf = (unsigned char *)(m + 1);
        m->tag = h->tag;
        m->msglen = m->len = h->msglen;
        m->heap = 1;
        tether__rxq_push(&l->unexpected, m);
        break;
    case TETHER__MATCH_SIG:
    case TETHER__MATCH_LEN:
        return mismatch(ep, l, h->tag, h->msglen, m->tag, m->msglen);
    }
    l->cur = m;
    return TETHER_OK;
}

static int take(rdma_ep *ep, rdma_link *l, const rdma_hdr *h, const unsigned char *p, size_t n)
{
    tether__rxmsg *m;
    if (h->offset == 0)
        TRY(begin(ep, l, h));
    m = l->cur;
    if (!m || h->offset != m->got || h->msglen != m->msglen || n > m->msglen - m->got)
        return protocol_error(ep, l, "a frame out of its message's order or bounds");
    memcpy(m->buf + m->got, p, n);
    m->got += n;
    if (m->got < m->msglen)
        return TETHER_OK;
    l->cur = NULL;
    if (m->req) {
        m->req->done = 1;
        if (m->heap) /* an unexpected message claimed while it was still arriving */
            free(m);
    }
    return TETHER_OK;
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
    if (h.seq != l->rx_seq)
        return tether__rdma_break(ep, TETHER_ENET, "rdma: frame %u from rank %d on %s arrived where "
                                  "frame %u was due: a message was lost or reordered on the way "
                                  "(%s QPs do not retransmit), so its data is not used", h.seq,
                                  l->peer, l->dev->name, l->rx_seq, ep->uc ? "UC" : "RC");
    l->rx_seq++;
    l->credits += (int)h.credits;
    if ((int32_t)(h.ctrl_seen - l->ctrl_acked) > 0)
        l->ctrl_acked = h.ctrl_seen;
    if (h.type == FRAME_DATA) {
        TRY(take(ep, l, &h, p + sizeof h, byte_len - sizeof h));
        l->pending++;
    } else {
        l->ctrl_seen++;
    }
    return tether__rdma_post_recv(ep, l, slot);
}

static int completion(rdma_ep *ep, const struct ibv_wc *wc)
{
    int peer = (int)(wc->wr_id >> 32), slot = (int)(wc->wr_id & 0xffffff);
    unsigned kind = (unsigned)(wc->wr_id >> 24) & 0xff;
    rdma_link *l;
    if (peer < 0 || peer >= ep->size || peer == ep->rank)
        return tether__rdma_break(ep, TETHER_EINTERNAL, "rdma: a completion for unknown work "
                                  "request %llx", (unsigned long long)wc->wr_id);
    l = &ep->links[peer];
    if (wc->status != IBV_WC_SUCCESS) {
        int gone = wc->status == IBV_WC_RETRY_EXC_ERR;
        /* A peer that closed normally said bye on its side channel before its QP went away. */
        TRY(tether__rdma_side_read(ep, l));
        if (l->bye) /* it closed normally: frames still on their way to it may fail */
            return TETHER_OK;
        return tether__rdma_break(ep, gone ? TETHER_EPEER : TETHER_ENET, "rdma: a %s rank %d on %s "
                                  "failed: %s (status %d, vendor error 0x%x)%s",
                                  kind == WR_SEND ? "send to" : "receive from", l->peer, l->dev->name, ep->ibv.wc_status_str(wc->status),
                                  (int)wc->status, wc->vendor_err,
                                  gone ? "; the peer or the link is gone: see the peer's output" : "");
    }
    if (kind == WR_SEND) {
        l->free_send[l->nfree_send++] = slot;
        return TETHER_OK;
    }
    return frame_in(ep, l, slot, wc->byte_len);
}

int tether__rdma_gone_check(rdma_ep *ep, rdma_link *l)
{
    if (!l->bye || l->rx_seq != l->bye_frames || (!l->posted.head && !l->cur))
        return TETHER_OK;
    return tether__rdma_break(ep, TETHER_EPEER, "rank %d closed its endpoint (its program freed the "
                              "group or is exiting) while rank %d still expects a message from it",
                              l->peer, ep->rank);
}

int tether__rdma_progress(rdma_ep *ep, int *moved)
{
    struct ibv_wc wc[POLL_BATCH];
    if (ep->err)
        return ep->err;
    for (int d = 0; d < ep->ndev; d++) {
        int n;
        do {
            n = ibv_poll_cq(ep->devs[d].cq, POLL_BATCH, wc);
            if (n < 0)
                return tether__rdma_break(ep, TETHER_ENET, "rdma: ibv_poll_cq(%s) failed: the CQ is "
                                          "broken (overrun?)", ep->devs[d].name);
            for (int i = 0; i < n; i++)
                TRY(completion(ep, &wc[i]));
            *moved += n;
        } while (n == POLL_BATCH);
    }
    for (int p = 0; p < ep->size; p++)
        if (p != ep->rank) {
            TRY(tether__rdma_push(ep, &ep->links[p]));
            TRY(tether__rdma_gone_check(ep, &ep->links[p]));
        }
    return TETHER_OK;
}

int tether__rdma_claim(rdma_ep *ep, rdma_link *l, struct tether_req *r)
{
    tether__rxmsg *m = NULL;
    switch (tether__rxq_match(&l->unexpected, r->rx.tag, r->rx.msglen, &m)) {
    case TETHER__MATCH_NONE:
        tether__rxq_push(&l->posted, &r->rx);
        return tether__rdma_gone_check(ep, l);
    case TETHER__MATCH_SIG:
    case TETHER__MATCH_LEN:
        return mismatch(ep, l, m->tag, m->msglen, r->rx.tag, r->rx.msglen);
    case TETHER__MATCH_OK:
        break;
    }
    if (m->got)
        memcpy(r->rx.buf, m->buf, (size_t)m->got);
    if (m->got == m->msglen) {
        free(m);
        r->done = 1;
    } else { /* still arriving (it is l->cur): the rest goes straight to the user's buffer */
        m->buf = r->rx.buf;
        m->req = r;
    }
    return TETHER_OK;
}
