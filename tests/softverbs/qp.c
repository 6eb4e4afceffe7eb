/* qp.c - queue pairs: creation limits, the RESET->INIT->RTR->RTS state machine and its attribute
 * masks.
 *
 * ibv_modify_qp accepts a transition only with every attribute the IB spec requires for it and none
 * it does not allow (the table in the kernel's ib_modify_qp_is_ok), else EINVAL, and checks the
 * values: port 1, a GRH (RoCE addresses by GID) whose sgid_index names a GID that exists, an MTU
 * the port supports. SOFTVERBS_DEBUG=1 names the attribute that failed.
 */
#include "softverbs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sv_qp *softverbs__qps;
static uint64_t next_id = 1;

#define M_INIT (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define M_RTR_UC (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)
#define M_RTR_RC (M_RTR_UC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define M_RTR_OPT (IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX)
#define M_RTS_RC                                                                                   \
    (IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)
#define M_RTS_OPT (IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE)

/* Index [0] is UC, [1] RC. Any state may also go to RESET or ERR with IBV_QP_STATE alone. */
static const struct transition {
    enum ibv_qp_state from, to;
    int req[2], opt[2];
} transitions[] = {
    {IBV_QPS_RESET, IBV_QPS_RESET, {0, 0}, {0, 0}},
    {IBV_QPS_RESET, IBV_QPS_INIT, {M_INIT, M_INIT}, {0, 0}},
    {IBV_QPS_INIT, IBV_QPS_INIT, {0, 0}, {M_INIT, M_INIT}},
    {IBV_QPS_INIT, IBV_QPS_RTR, {M_RTR_UC, M_RTR_RC}, {M_RTR_OPT, M_RTR_OPT}},
    {IBV_QPS_RTR,
     IBV_QPS_RTS,
     {IBV_QP_SQ_PSN, M_RTS_RC},
     {M_RTS_OPT, M_RTS_OPT | IBV_QP_MIN_RNR_TIMER}},
    {IBV_QPS_RTS, IBV_QPS_RTS, {0, 0}, {M_RTS_OPT, M_RTS_OPT | IBV_QP_MIN_RNR_TIMER}},
};

static const char *const state_names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
static const char *const attr_names[] = {"STATE",
                                         "CUR_STATE",
                                         "EN_SQD_ASYNC_NOTIFY",
                                         "ACCESS_FLAGS",
                                         "PKEY_INDEX",
                                         "PORT",
                                         "QKEY",
                                         "AV",
                                         "PATH_MTU",
                                         "TIMEOUT",
                                         "RETRY_CNT",
                                         "RNR_RETRY",
                                         "RQ_PSN",
                                         "MAX_QP_RD_ATOMIC",
                                         "ALT_PATH",
                                         "MIN_RNR_TIMER",
                                         "SQ_PSN",
                                         "MAX_DEST_RD_ATOMIC",
                                         "PATH_MIG_STATE",
                                         "CAP",
                                         "DEST_QPN"};

static const char *state_name(enum ibv_qp_state s)
{
    return (unsigned)s < sizeof state_names / sizeof state_names[0] ? state_names[s] : "?";
}

/* "AV|RQ_PSN": the IBV_QP_* names of the bits in mask. */
static const char *mask_names(int mask, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < sizeof attr_names / sizeof attr_names[0]; i++)
        if (mask & (1 << i) && o < len)
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "|" : "", attr_names[i]);
    return buf;
}

sv_qp *softverbs__qp_find(uint32_t qpn)
{
    sv_qp *q = softverbs__qps;
    while (q && q->qp.qp_num != qpn)
        q = q->next;
    return q;
}

int softverbs__gid_index(const sv_device *d, const union ibv_gid *gid)
{
    static const union ibv_gid zero;
    if (!memcmp(gid, &zero, sizeof zero))
        return -1;
    for (int i = 0; i < SV_GID_TBL_LEN; i++)
        if (!memcmp(&d->gid[i], gid, sizeof *gid))
            return i;
    return -1;
}

static int qp_allowed(sv_context *c, struct ibv_pd *pd, const struct ibv_qp_init_attr *ia)
{
    const sv_profile *p = &softverbs__env.prof;
    const struct ibv_qp_cap *cap = &ia->cap;
    const char *dev = c->dev->dev.name;
    if (ia->qp_type != IBV_QPT_UC && ia->qp_type != IBV_QPT_RC)
        return softverbs__fail(EOPNOTSUPP, "ibv_create_qp(%s): only UC and RC are emulated", dev);
    if (ia->srq)
        return softverbs__fail(EOPNOTSUPP, "ibv_create_qp(%s): SRQs are not emulated", dev);
    if (!ia->send_cq || !ia->recv_cq || ia->send_cq->context != pd->context ||
        ia->recv_cq->context != pd->context)
        return softverbs__fail(EINVAL,
                               "ibv_create_qp(%s): send_cq and recv_cq must be CQs of "
                               "the PD's context",
                               dev);
    if (cap->max_send_wr > (uint32_t)p->max_qp_wr || cap->max_recv_wr > (uint32_t)p->max_qp_wr ||
        cap->max_send_sge > (uint32_t)p->max_sge || cap->max_recv_sge > (uint32_t)p->max_sge ||
        cap->max_inline_data > (uint32_t)p->max_inline)
        return softverbs__fail(EINVAL,
                               "ibv_create_qp(%s): caps send_wr %u recv_wr %u send_sge %u "
                               "recv_sge %u inline %u exceed max_qp_wr %d, max_sge %d, inline %d",
                               dev, cap->max_send_wr, cap->max_recv_wr, cap->max_send_sge,
                               cap->max_recv_sge, cap->max_inline_data, p->max_qp_wr, p->max_sge,
                               p->max_inline);
    if (c->dev->nqp >= p->max_qp)
        return softverbs__fail(ENOMEM, "ibv_create_qp(%s): the device's %d QPs are all in use", dev,
                               p->max_qp);
    return 0;
}

static void qp_count(sv_qp *q, int delta)
{
    sv_device *d = q->dev;
    ((sv_context *)q->qp.context)->nqp += delta;
    ((sv_pd *)q->qp.pd)->nqp += delta;
    ((sv_cq *)q->qp.send_cq)->nqp += delta;
    ((sv_cq *)q->qp.recv_cq)->nqp += delta;
    d->nqp += delta;
    if (d->nqp > d->peak_qp)
        d->peak_qp = d->nqp;
}

SV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
    sv_context *c = (sv_context *)pd->context;
    sv_qp *q = NULL;
    int rc;
    pthread_mutex_lock(&softverbs__lock);
    rc = qp_allowed(c, pd, ia);
    if (!rc && !(q = calloc(1, sizeof *q)))
        rc = ENOMEM;
    if (!rc) {
        q->id = next_id++;
        q->dev = c->dev;
        q->init = *ia;
        q->qp = (struct ibv_qp){.context = pd->context,
                                .qp_context = ia->qp_context,
                                .pd = pd,
                                .send_cq = ia->send_cq,
                                .recv_cq = ia->recv_cq,
                                .state = IBV_QPS_RESET,
                                .qp_type = ia->qp_type};
        q->attr.port_num = 1;
        rc = softverbs__listen(q);
    }
    if (!rc) {
        q->next = softverbs__qps;
        softverbs__qps = q;
        qp_count(q, 1);
    } else if (q) {
        free(q);
        q = NULL;
    }
    pthread_mutex_unlock(&softverbs__lock);
    softverbs__wake(); /* the service thread must poll the new listening socket */
    errno = rc;
    return q ? &q->qp : NULL;
}

/* The transition's mask rule; 0 or EINVAL naming what is missing or not allowed. */
static int check_mask(const sv_qp *q, const struct ibv_qp_attr *a, int mask, enum ibv_qp_state to)
{
    enum ibv_qp_state from = q->qp.state;
    int rc_type = q->qp.qp_type == IBV_QPT_RC, req = 0, allowed = 0, found = 0;
    char names[256];
    if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != from)
        return softverbs__fail(EINVAL, "ibv_modify_qp(QP %u): cur_qp_state %s, but it is %s",
                               q->qp.qp_num, state_name(a->cur_qp_state), state_name(from));
    for (unsigned i = 0; i < sizeof transitions / sizeof transitions[0]; i++)
        if (transitions[i].from == from && transitions[i].to == to) {
            req = transitions[i].req[rc_type];
            allowed = req | transitions[i].opt[rc_type];
            found = 1;
        }
    if (!found && to != IBV_QPS_RESET && to != IBV_QPS_ERR)
        return softverbs__fail(EINVAL, "ibv_modify_qp(QP %u): %s -> %s is not a valid transition",
                               q->qp.qp_num, state_name(from), state_name(to));
    if ((mask & req) != req)
        return softverbs__fail(EINVAL, "ibv_modify_qp(QP %u): %s -> %s needs attributes %s",
                               q->qp.qp_num, state_name(from), state_name(to),
                               mask_names(req & ~mask, names, sizeof names));
    if (mask & ~(allowed | IBV_QP_STATE))
        return softverbs__fail(EINVAL, "ibv_modify_qp(QP %u): %s -> %s does not take %s",
                               q->qp.qp_num, state_name(from), state_name(to),
                               mask_names(mask & ~(allowed | IBV_QP_STATE), names, sizeof names));
    return 0;
}

static int check_av(const sv_qp *q, const struct ibv_ah_attr *ah)
{
    const union ibv_gid *sgid;
    if (softverbs__env.prof.ib && !ah->is_global && ah->port_num == 1) {
        if (ah->dlid == 0)
            return softverbs__fail(EINVAL,
                                   "ibv_modify_qp(QP %u): ah_attr without a GRH needs the "
                                   "destination's LID (dlid 0)",
                                   q->qp.qp_num);
        return 0;
    }
    if (!ah->is_global || ah->port_num != 1)
        return softverbs__fail(EINVAL,
                               "ibv_modify_qp(QP %u): ah_attr needs is_global=1 (RoCE "
                               "addresses by GID; ib: or a dlid) and port_num=1, got %d and %d",
                               q->qp.qp_num, ah->is_global, ah->port_num);
    if (ah->grh.sgid_index >= SV_GID_TBL_LEN)
        return softverbs__fail(EINVAL,
                               "ibv_modify_qp(QP %u): sgid_index %d beyond the GID table "
                               "of %d",
                               q->qp.qp_num, ah->grh.sgid_index, SV_GID_TBL_LEN);
    sgid = &q->dev->gid[ah->grh.sgid_index];
    if (softverbs__gid_index(q->dev, sgid) < 0)
        return softverbs__fail(EINVAL,
                               "ibv_modify_qp(QP %u): sgid_index %d of %s is an empty GID "
                               "entry",
                               q->qp.qp_num, ah->grh.sgid_index, q->dev->dev.name);
    return 0;
}

/* The values of the attributes in mask; 0 or EINVAL naming the bad one. */
static int check_values(const sv_qp *q, const struct ibv_qp_attr *a, int mask)
{
    const int access_known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                             IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    uint32_t qpn = q->qp.qp_num;
    if ((mask & IBV_QP_PORT) && a->port_num != 1)
        return softverbs__fail(EINVAL, "ibv_modify_qp(QP %u): port_num %d, the only port is 1", qpn,
                               a->port_num);
    if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
        return softverbs__fail(EINVAL, "ibv_modify_qp(QP %u): pkey_index %d, the table has 1", qpn,
                               a->pkey_index);
    if ((mask & IBV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~(unsigned)access_known))
        return softverbs__fail(EINVAL, "ibv_modify_qp(QP %u): qp_access_flags 0x%x", qpn,
                               a->qp_access_flags);
    if ((mask & IBV_QP_PATH_MTU) &&
        (a->path_mtu < IBV_MTU_256 || a->path_mtu > softverbs__env.prof.mtu))
        return softverbs__fail(EINVAL, "ibv_modify_qp(QP %u): path_mtu %d above the port's %d", qpn,
                               a->path_mtu, softverbs__env.prof.mtu);
    if ((mask & IBV_QP_AV) && check_av(q, &a->ah_attr))
        return EINVAL;
    if (((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff) ||
        ((mask & IBV_QP_RQ_PSN) && a->rq_psn > 0xffffff) ||
        ((mask & IBV_QP_SQ_PSN) && a->sq_psn > 0xffffff))
        return softverbs__fail(EINVAL,
                               "ibv_modify_qp(QP %u): dest_qp_num, rq_psn and sq_psn "
                               "are 24-bit",
                               qpn);
    if (((mask & IBV_QP_TIMEOUT) && a->timeout > 31) ||
        ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7) ||
        ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7) ||
        ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31))
        return softverbs__fail(EINVAL,
                               "ibv_modify_qp(QP %u): timeout/min_rnr_timer are 5-bit, "
                               "retry_cnt/rnr_retry 3-bit",
                               qpn);
    return 0;
}

/* Copy the attributes named in mask; the emulator reads only these. */
static void apply(sv_qp *q, const struct ibv_qp_attr *a, int mask)
{
    struct ibv_qp_attr *s = &q->attr;
    if (mask & IBV_QP_ACCESS_FLAGS)
        s->qp_access_flags = a->qp_access_flags;
    if (mask & IBV_QP_AV)
        s->ah_attr = a->ah_attr;
    if (mask & IBV_QP_PATH_MTU)
        s->path_mtu = a->path_mtu;
    if (mask & IBV_QP_DEST_QPN)
        s->dest_qp_num = a->dest_qp_num;
    if (mask & IBV_QP_RQ_PSN)
        s->rq_psn = q->rq_psn = a->rq_psn;
    if (mask & IBV_QP_SQ_PSN)
        s->sq_psn = q->sq_psn = a->sq_psn;
    if (mask & IBV_QP_TIMEOUT)
        s->timeout = a->timeout;
    if (mask & IBV_QP_RETRY_CNT)
        s->retry_cnt = a->retry_cnt;
    if (mask & IBV_QP_RNR_RETRY)
        s->rnr_retry = a->rnr_retry;
    if (mask & IBV_QP_MIN_RNR_TIMER)
        s->min_rnr_timer = a->min_rnr_timer;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
        s->max_rd_atomic = a->max_rd_atomic;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
        s->max_dest_rd_atomic = a->max_dest_rd_atomic;
}

SV_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
    sv_qp *q = (sv_qp *)qp;
    enum ibv_qp_state to;
    int rc;
    pthread_mutex_lock(&softverbs__lock);
    to = (attr_mask & IBV_QP_STATE) ? attr->qp_state : qp->state;
    rc = check_mask(q, attr, attr_mask, to);
    if (!rc)
        rc = check_values(q, attr, attr_mask);
    if (!rc) {
        apply(q, attr, attr_mask);
        if (to == IBV_QPS_ERR)
            softverbs__qp_error(q, IBV_WC_WR_FLUSH_ERR);
        if (to == IBV_QPS_RESET)
            softverbs__qp_drain(q);
        qp->state = to;
        q->attr.qp_state = to;
    }
    pthread_mutex_unlock(&softverbs__lock);
    if (!rc)
        softverbs__wake();
    return rc;
}

SV_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                           struct ibv_qp_init_attr *init_attr)
{
    sv_qp *q = (sv_qp *)qp;
    (void)attr_mask; /* every attribute is filled, which the man page allows */
    pthread_mutex_lock(&softverbs__lock);
    *attr = q->attr;
    attr->qp_state = attr->cur_qp_state = qp->state;
    attr->cap = q->init.cap;
    *init_attr = q->init;
    pthread_mutex_unlock(&softverbs__lock);
    return 0;
}

SV_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
    sv_qp *q = (sv_qp *)qp, **pp;
    pthread_mutex_lock(&softverbs__lock);
    for (pp = &softverbs__qps; *pp != q; pp = &(*pp)->next)
        ;
    *pp = q->next;
    softverbs__qp_drain(q);
    softverbs__link_close_qp(q);
    qp_count(q, -1);
    pthread_mutex_unlock(&softverbs__lock);
    softverbs__wake(); /* it may be polling the sockets just closed */
    free(q);
    return 0;
}
