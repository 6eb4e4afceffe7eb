/* post.c - posting work requests and finishing them: send/receive queues, completions, the error
 * state.
 *
 * As on hardware: posting checks the QP state, opcode, SGE count, inline size and queue depth and
 * returns EINVAL/ENOMEM with *bad_wr set; an unsignaled send makes no completion, and its queue
 * slot frees only when a later send completion is polled; a QP in the error state completes every
 * queued and later request with IBV_WC_WR_FLUSH_ERR.
 */
#include "softverbs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static sv_swr *pop_send(sv_qp *q)
{
    sv_swr *w = q->sq_head;
    q->sq_head = w->next;
    if (!q->sq_head)
        q->sq_tail = NULL;
    return w;
}

static sv_rwr *pop_recv(sv_qp *q)
{
    sv_rwr *w = q->rq_head;
    q->rq_head = w->next;
    if (!q->rq_head)
        q->rq_tail = NULL;
    q->rq_count--;
    return w;
}

/* Make w's completion (errors always, successes when signaled), free w; -1 if the CQ overran. */
static int complete_send(sv_qp *q, sv_swr *w, enum ibv_wc_status st)
{
    int signaled = (w->flags & IBV_SEND_SIGNALED) || q->init.sq_sig_all;
    int rc = 0;
    if (st != IBV_WC_SUCCESS || signaled) {
        int write = w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
        struct ibv_wc wc = {.wr_id = w->wr_id,
                            .status = st,
                            .qp_num = q->qp.qp_num,
                            .opcode = write ? IBV_WC_RDMA_WRITE : IBV_WC_SEND,
                            .byte_len = (uint32_t)w->len};
        rc = softverbs__cq_push((sv_cq *)q->qp.send_cq, &wc, q->unsignaled + 1, 0);
        q->unsignaled = 0;
    } else {
        q->unsignaled++;
    }
    free(w->inl);
    free(w);
    return rc;
}

static int complete_recv(sv_qp *q, sv_rwr *w, const struct ibv_wc *wc, int solicited)
{
    struct ibv_wc out = *wc;
    int rc;
    out.wr_id = w->wr_id;
    out.qp_num = q->qp.qp_num;
    rc = softverbs__cq_push((sv_cq *)q->qp.recv_cq, &out, 0, solicited);
    free(w);
    return rc;
}

void softverbs__qp_error(sv_qp *q, enum ibv_wc_status head_status)
{
    struct ibv_wc flush = {.status = IBV_WC_WR_FLUSH_ERR, .opcode = IBV_WC_RECV};
    if (q->qp.state == IBV_QPS_ERR && !q->sq_head && !q->rq_head)
        return;
    q->qp.state = IBV_QPS_ERR;
    q->attr.qp_state = IBV_QPS_ERR;
    if (q->sq_head)
        complete_send(q, pop_send(q), head_status);
    while (q->sq_head)
        complete_send(q, pop_send(q), IBV_WC_WR_FLUSH_ERR);
    while (q->rq_head)
        complete_recv(q, pop_recv(q), &flush, 0);
    softverbs__link_close_out(q);
}

void softverbs__send_done(sv_qp *q, enum ibv_wc_status st)
{
    if (complete_send(q, pop_send(q), st) || st != IBV_WC_SUCCESS)
        softverbs__qp_error(q, IBV_WC_WR_FLUSH_ERR);
}

void softverbs__recv_done(sv_qp *q, enum ibv_wc_status st, uint32_t len, const sv_hdr *h,
                          uint32_t src_qp)
{
    struct ibv_wc wc = {.status = st,
                        .byte_len = len,
                        .src_qp = src_qp,
                        .opcode = h->kind == SV_WRITE ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV};
    if (h->flags & SV_F_IMM) {
        wc.wc_flags = IBV_WC_WITH_IMM;
        wc.imm_data = h->imm; /* network order end to end, as the caller gave it */
    }
    if (complete_recv(q, pop_recv(q), &wc, (h->flags & SV_F_SOLICITED) != 0) ||
        st != IBV_WC_SUCCESS)
        softverbs__qp_error(q, IBV_WC_WR_FLUSH_ERR);
}

void softverbs__qp_drain(sv_qp *q)
{
    while (q->sq_head) {
        sv_swr *w = pop_send(q);
        free(w->inl);
        free(w);
    }
    while (q->rq_head)
        free(pop_recv(q));
    q->sq_outstanding = 0;
    q->unsignaled = 0;
    q->link_down = 0;
    softverbs__link_close_out(q);
}

static int send_allowed(const sv_qp *q, const struct ibv_send_wr *wr, size_t len)
{
    int write = wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
    uint32_t qpn = q->qp.qp_num;
    if (q->qp.state != IBV_QPS_RTS && q->qp.state != IBV_QPS_ERR)
        return softverbs__fail(EINVAL, "ibv_post_send(QP %u): the QP is not in RTS", qpn);
    if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM && !write)
        return softverbs__fail(EOPNOTSUPP,
                               "ibv_post_send(QP %u): opcode %d is not emulated "
                               "(SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM are)",
                               qpn, wr->opcode);
    if (write && q->qp.qp_type == IBV_QPT_UC && !softverbs__env.prof.uc_rdma)
        return softverbs__fail(EINVAL,
                               "ibv_post_send(QP %u): RDMA WRITE on UC, which the apple "
                               "profile lacks",
                               qpn);
    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->init.cap.max_send_sge)
        return softverbs__fail(EINVAL, "ibv_post_send(QP %u): num_sge %d above max_send_sge %u",
                               qpn, wr->num_sge, q->init.cap.max_send_sge);
    if ((wr->send_flags & IBV_SEND_INLINE) && len > q->init.cap.max_inline_data)
        return softverbs__fail(EINVAL,
                               "ibv_post_send(QP %u): %zu inline bytes above "
                               "max_inline_data %u",
                               qpn, len, q->init.cap.max_inline_data);
    if (len > softverbs__env.prof.max_msg)
        return softverbs__fail(EINVAL, "ibv_post_send(QP %u): %zu bytes above max_msg_sz %u", qpn,
                               len, softverbs__env.prof.max_msg);
    if (q->sq_outstanding >= (int)q->init.cap.max_send_wr)
        return softverbs__fail(ENOMEM,
                               "ibv_post_send(QP %u): send queue full (%u WRs; "
                               "unsignaled ones free only when a later completion is polled)",
                               qpn, q->init.cap.max_send_wr);
    return 0;
}

static sv_swr *copy_send(sv_qp *q, const struct ibv_send_wr *wr, size_t len)
{
    sv_swr *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->wr_id = wr->wr_id;
    w->opcode = wr->opcode;
    w->flags = wr->send_flags;
    w->imm = wr->imm_data;
    w->raddr = wr->wr.rdma.remote_addr;
    w->rkey = wr->wr.rdma.rkey;
    w->nsge = wr->num_sge;
    memcpy(w->sge, wr->sg_list, sizeof *w->sge * (size_t)wr->num_sge);
    w->len = len;
    w->psn = q->sq_psn;
    q->sq_psn = (q->sq_psn + 1) & 0xffffff;
    w->retry_left = q->attr.retry_cnt;
    w->rnr_left = q->attr.rnr_retry;
    if ((wr->send_flags & IBV_SEND_INLINE) && len) {
        size_t o = 0;
        if (!(w->inl = malloc(len))) {
            free(w);
            return NULL;
        }
        for (int i = 0; i < wr->num_sge; o += wr->sg_list[i].length, i++)
            memcpy(w->inl + o, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
    }
    return w;
}

static int post_one_send(sv_qp *q, const struct ibv_send_wr *wr)
{
    size_t len = 0;
    sv_swr *w;
    int rc;
    for (int i = 0; i < wr->num_sge && i < SV_MAX_SGE; i++)
        len += wr->sg_list[i].length;
    if ((rc = send_allowed(q, wr, len)) != 0)
        return rc;
    if (!(w = copy_send(q, wr, len)))
        return ENOMEM;
    if (q->sq_tail)
        q->sq_tail->next = w;
    else
        q->sq_head = w;
    q->sq_tail = w;
    q->sq_outstanding++;
    if (q->qp.state == IBV_QPS_ERR)
        softverbs__send_done(q, IBV_WC_WR_FLUSH_ERR);
    return 0;
}

int softverbs__post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    sv_qp *q = (sv_qp *)qp;
    int rc = 0;
    pthread_mutex_lock(&softverbs__lock);
    while (wr && !(rc = post_one_send(q, wr)))
        wr = wr->next;
    if (rc)
        *bad = wr;
    softverbs__qp_kick(q, softverbs__now_us());
    pthread_mutex_unlock(&softverbs__lock);
    softverbs__wake();
    errno = rc;
    return rc;
}

static int post_one_recv(sv_qp *q, const struct ibv_recv_wr *wr)
{
    uint32_t qpn = q->qp.qp_num;
    sv_rwr *w;
    if (q->qp.state == IBV_QPS_RESET)
        return softverbs__fail(EINVAL, "ibv_post_recv(QP %u): the QP is in RESET", qpn);
    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > q->init.cap.max_recv_sge)
        return softverbs__fail(EINVAL, "ibv_post_recv(QP %u): num_sge %d above max_recv_sge %u",
                               qpn, wr->num_sge, q->init.cap.max_recv_sge);
    if (q->rq_count >= (int)q->init.cap.max_recv_wr)
        return softverbs__fail(ENOMEM, "ibv_post_recv(QP %u): receive queue full (%u WRs)", qpn,
                               q->init.cap.max_recv_wr);
    if (!(w = calloc(1, sizeof *w)))
        return ENOMEM;
    w->wr_id = wr->wr_id;
    w->nsge = wr->num_sge;
    memcpy(w->sge, wr->sg_list, sizeof *w->sge * (size_t)wr->num_sge);
    if (q->rq_tail)
        q->rq_tail->next = w;
    else
        q->rq_head = w;
    q->rq_tail = w;
    q->rq_count++;
    if (q->qp.state == IBV_QPS_ERR)
        softverbs__qp_error(q, IBV_WC_WR_FLUSH_ERR);
    return 0;
}

int softverbs__post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
    sv_qp *q = (sv_qp *)qp;
    int rc = 0;
    pthread_mutex_lock(&softverbs__lock);
    while (wr && !(rc = post_one_recv(q, wr)))
        wr = wr->next;
    if (rc)
        *bad = wr;
    pthread_mutex_unlock(&softverbs__lock);
    errno = rc;
    return rc;
}
