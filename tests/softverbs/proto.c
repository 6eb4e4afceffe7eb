/* proto.c - what the wire does: a send WR becomes a frame; at the receiver a frame becomes a
 * completion, an RNR NAK or a silent drop; on RC the answers drive retries and error completions.
 *
 * Per QP one message is on the wire at a time. UC: a message is done once written (a send
 * completion does not mean delivery); the receiver silently drops it when no RECV is posted, the QP
 * is not in RTR/RTS, or the link's QPNs and GIDs do not match its RTR settings; a PSN gap just
 * resyncs. RC: the receiver answers each message; no RECV -> RNR NAK, retried after the receiver's
 * min_rnr_timer up to rnr_retry times (7 = forever), then IBV_WC_RNR_RETRY_EXC_ERR; a lost or
 * refused message is retried after the QP's timeout up to retry_cnt times, then
 * IBV_WC_RETRY_EXC_ERR (timeout 0 means wait forever, as in the spec). On both, a link that breaks
 * (the peer process died or destroyed its QP) fails the next or current send with
 * IBV_WC_RETRY_EXC_ERR: the Thunderbolt link going down.
 */
#include "softverbs.h"

#include <string.h>

/* IB spec's RNR NAK timer field, in microseconds (0 is the longest). */
static const uint32_t rnr_us[32] = {655360, 10,    20,    30,     40,     60,     80,     120,
                                    160,    240,   320,   480,    640,    960,    1280,   1920,
                                    2560,   3840,  5120,  7680,   10240,  15360,  20480,  30720,
                                    40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};

/* 4.096 us * 2^t, kept within [1 ms, 1 s] so tests neither spin nor stall. */
static uint64_t timeout_us(int t)
{
    uint64_t us = (4096ull << t) / 1000u;
    return us < 1000 ? 1000 : us > 1000000 ? 1000000 : us;
}

static int is_write(const sv_swr *w)
{
    return w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static void retry_later(sv_qp *q, sv_swr *w, uint64_t now, int rnr, uint32_t rnr_timer)
{
    int *left = rnr ? &w->rnr_left : &w->retry_left;
    if (*left == 0) {
        softverbs__send_done(q, rnr ? IBV_WC_RNR_RETRY_EXC_ERR : IBV_WC_RETRY_EXC_ERR);
        return;
    }
    if (!rnr || *left != 7)
        (*left)--;
    w->state = SV_WR_WAIT_RETRY;
    if (rnr)
        w->due_us = now + rnr_us[rnr_timer & 31];
    else
        w->due_us = q->attr.timeout ? now + timeout_us(q->attr.timeout) : 0;
}

/* A message that never reached the peer: UC cannot tell, RC retries. */
static void lost(sv_qp *q, sv_swr *w, uint64_t now)
{
    if (q->qp.qp_type == IBV_QPT_UC)
        softverbs__send_done(q, IBV_WC_SUCCESS);
    else
        retry_later(q, w, now, 0, 0);
}

static int sges_ok(const sv_qp *q, const sv_swr *w)
{
    if (w->inl)
        return 1;
    for (int i = 0; i < w->nsge; i++)
        if (softverbs__mr_check(q->qp.pd, w->sge[i].lkey, 0, w->sge[i].addr, w->sge[i].length, 0))
            return 0;
    return 1;
}

static int queue_frame(sv_qp *q, const sv_swr *w)
{
    sv_hdr h = {.magic = SV_MAGIC,
                .kind = is_write(w) ? SV_WRITE : SV_SEND,
                .psn = w->psn,
                .imm = w->imm,
                .rkey = w->rkey,
                .raddr = w->raddr,
                .len = w->len};
    unsigned char *p;
    if (w->opcode == IBV_WR_SEND_WITH_IMM || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
        h.flags |= SV_F_IMM;
    if (w->flags & IBV_SEND_SOLICITED)
        h.flags |= SV_F_SOLICITED;
    if (!(p = softverbs__link_reserve(q->out, &h)))
        return -1;
    if (w->inl)
        memcpy(p, w->inl, w->len);
    for (int i = 0; !w->inl && i < w->nsge; p += w->sge[i].length, i++)
        memcpy(p, (void *)(uintptr_t)w->sge[i].addr, w->sge[i].length);
    softverbs__count_tx(w->len, is_write(w));
    return 0;
}

/* Start putting the head WR on the wire. */
static void transmit(sv_qp *q, sv_swr *w, uint64_t now)
{
    int link, resend = w->state == SV_WR_WAIT_RETRY;
    if (q->link_down || softverbs__fault_dev_down(q->dev, now)) {
        softverbs__send_done(q, IBV_WC_RETRY_EXC_ERR);
        return;
    }
    if (!sges_ok(q, w)) {
        softverbs__send_done(q, IBV_WC_LOC_PROT_ERR);
        return;
    }
    link = softverbs__link_connect(q);
    if (link == SV_LINK_BUSY) {
        q->connect_due_us = now + 1000;
        return;
    }
    q->connect_due_us = 0;
    if (link == SV_LINK_NONE || softverbs__fault_dev_silent(q->dev, now) ||
        softverbs__fault_drop(resend)) {
        lost(q, w, now);
        return;
    }
    if (queue_frame(q, w)) {
        softverbs__send_done(q, IBV_WC_GENERAL_ERR); /* out of memory */
        return;
    }
    w->state = SV_WR_WRITING;
    if (softverbs__link_flush(q->out))
        softverbs__link_lost(q);
}

void softverbs__qp_kick(sv_qp *q, uint64_t now)
{
    while (q->qp.state == IBV_QPS_RTS && q->sq_head) {
        sv_swr *w = q->sq_head;
        if (w->state == SV_WR_WAIT_ACK ||
            (w->state == SV_WR_WAIT_RETRY && (!w->due_us || w->due_us > now)))
            return;
        if (w->state == SV_WR_WRITING) {
            if (!q->out || !softverbs__link_idle(q->out))
                return;
            if (q->qp.qp_type == IBV_QPT_RC) {
                w->state = SV_WR_WAIT_ACK;
                return;
            }
            softverbs__send_done(q, IBV_WC_SUCCESS);
            continue;
        }
        if (q->connect_due_us > now)
            return;
        transmit(q, w, now);
    }
}

uint64_t softverbs__qp_due(const sv_qp *q)
{
    const sv_swr *w = q->sq_head;
    if (!w || q->qp.state != IBV_QPS_RTS)
        return 0;
    if (w->state == SV_WR_WAIT_RETRY)
        return w->due_us;
    return w->state == SV_WR_NEW ? q->connect_due_us : 0;
}

void softverbs__link_lost(sv_qp *q)
{
    softverbs__link_close_out(q);
    q->link_down = 1;
    if (q->sq_head && q->qp.state == IBV_QPS_RTS)
        softverbs__send_done(q, IBV_WC_RETRY_EXC_ERR);
}

static void on_resp(sv_qp *q, const sv_hdr *h, uint64_t now)
{
    sv_swr *w = q->sq_head;
    /* The answer can beat the service thread's look at the drained send buffer. */
    if (w && w->state == SV_WR_WRITING && q->out && softverbs__link_idle(q->out))
        w->state = SV_WR_WAIT_ACK;
    if (!w || w->state != SV_WR_WAIT_ACK || w->psn != h->psn)
        return; /* a late answer to a message since retried */
    switch (h->status) {
    case SV_ACK:
        softverbs__send_done(q, IBV_WC_SUCCESS);
        break;
    case SV_RNR:
        retry_later(q, w, now, 1, h->imm);
        break;
    case SV_DROP:
        retry_later(q, w, now, 0, 0);
        break;
    case SV_NAK_ACCESS:
        softverbs__send_done(q, IBV_WC_REM_ACCESS_ERR);
        break;
    case SV_NAK_INVALID:
        softverbs__send_done(q, IBV_WC_REM_INV_REQ_ERR);
        break;
    default:
        softverbs__send_done(q, IBV_WC_REM_OP_ERR);
    }
}

/* Would this QP take a message from the link described by hi at all? */
static int rx_accepts(const sv_qp *q, const sv_hello *hi)
{
    const struct ibv_ah_attr *ah = &q->attr.ah_attr;
    if (!(q->qp.state == IBV_QPS_RTR || q->qp.state == IBV_QPS_RTS) ||
        hi->src_qpn != q->attr.dest_qp_num)
        return 0;
    if (!ah->is_global) /* ib, by LID: from the LID we named, to ours */
        return hi->slid == ah->dlid && hi->dlid == softverbs__lid(q->dev);
    return !memcmp(&hi->sgid, &ah->grh.dgid, sizeof hi->sgid) &&
           softverbs__gid_index(q->dev, &hi->dgid) >= 0;
}

static int rx_write(sv_qp *q, const sv_hdr *h, const unsigned char *payload)
{
    if (!(q->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE) ||
        softverbs__mr_check(q->qp.pd, h->rkey, 1, h->raddr, h->len, IBV_ACCESS_REMOTE_WRITE))
        return SV_NAK_ACCESS;
    memcpy((void *)(uintptr_t)h->raddr, payload, h->len);
    return SV_ACK;
}

/* Consume the head RECV: scatter a SEND into it, or just report a WRITE_WITH_IMM. */
static int rx_recv(sv_qp *q, const sv_hdr *h, const unsigned char *payload, uint32_t src_qpn)
{
    const sv_rwr *w = q->rq_head;
    uint64_t room = 0, left = h->kind == SV_SEND ? h->len : 0;
    for (int i = 0; i < w->nsge; i++)
        room += w->sge[i].length;
    if (left > room) {
        softverbs__recv_done(q, IBV_WC_LOC_LEN_ERR, (uint32_t)h->len, h, src_qpn);
        return SV_NAK_INVALID;
    }
    for (int i = 0; i < w->nsge && left; i++) {
        uint64_t n = left < w->sge[i].length ? left : w->sge[i].length;
        if (softverbs__mr_check(q->qp.pd, w->sge[i].lkey, 0, w->sge[i].addr, n,
                                IBV_ACCESS_LOCAL_WRITE)) {
            softverbs__recv_done(q, IBV_WC_LOC_PROT_ERR, (uint32_t)h->len, h, src_qpn);
            return SV_NAK_OP;
        }
        memcpy((void *)(uintptr_t)w->sge[i].addr, payload, n);
        payload += n;
        left -= n;
    }
    softverbs__recv_done(q, IBV_WC_SUCCESS, (uint32_t)h->len, h, src_qpn);
    return SV_ACK;
}

/* 1 if psn comes before expected in 24-bit PSN space: a duplicate of a message already taken. */
static int psn_before(uint32_t psn, uint32_t expected)
{
    uint32_t d = (expected - psn) & 0xffffff;
    return d != 0 && d < 0x800000;
}

/* A SEND or WRITE at the receiving QP; returns the answer an RC sender gets. */
static int rx_data(sv_qp *q, const sv_hello *hi, const sv_hdr *h, const unsigned char *payload)
{
    int rc_type = q->qp.qp_type == IBV_QPT_RC, st;
    if (!rx_accepts(q, hi))
        return SV_DROP;
    if (h->psn != q->rq_psn) {
        if (rc_type)
            return psn_before(h->psn, q->rq_psn) ? SV_ACK : SV_DROP;
        q->rq_psn = h->psn; /* UC takes the next whole message, whatever its PSN */
    }
    if ((h->kind == SV_SEND || (h->flags & SV_F_IMM)) && !q->rq_head) {
        if (rc_type)
            return SV_RNR;
        q->rq_psn = (h->psn + 1) & 0xffffff; /* UC: dropped, silently */
        return SV_DROP;
    }
    if (h->kind == SV_WRITE && (st = rx_write(q, h, payload)) != SV_ACK)
        return st;
    st = (h->kind == SV_SEND || (h->flags & SV_F_IMM)) ? rx_recv(q, h, payload, hi->src_qpn)
                                                       : SV_ACK;
    q->rq_psn = (h->psn + 1) & 0xffffff;
    return st;
}

void softverbs__on_frame(sv_conn *c, sv_qp *q, const sv_hdr *h, unsigned char *payload)
{
    const sv_hello *hi = softverbs__link_hello(c);
    sv_hdr dropped;
    int st, silent;
    if (!q)
        return;
    /* A silent device takes nothing in. RC senders have no timer for a missing answer here, so the
     * frame is answered as lost (SV_DROP: retried, then IBV_WC_RETRY_EXC_ERR), as a NIC's timer
     * would make it; an answer arriving is lost too. */
    silent = softverbs__fault_dev_silent(q->dev, softverbs__now_us());
    if (h->kind == SV_RESP) {
        dropped = *h;
        dropped.status = SV_DROP;
        on_resp(q, silent ? &dropped : h, softverbs__now_us());
        return;
    }
    st = hi && !silent ? rx_data(q, hi, h, payload) : SV_DROP;
    if (q->qp.qp_type == IBV_QPT_RC) {
        sv_hdr r = {.magic = SV_MAGIC,
                    .kind = SV_RESP,
                    .psn = h->psn,
                    .status = (uint32_t)st,
                    .imm = q->attr.min_rnr_timer};
        softverbs__link_reserve(c, &r);
    }
}
