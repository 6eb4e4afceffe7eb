/* connect.c - the connection handshake of the connection manager emulator, and the QP it drives.
 *
 * As the IB CM: the active side sends a REQ (its QP number, PSN, GID, MTU, private data), the
 * passive side's application gets CONNECT_REQUEST and answers with rdma_accept (its QP to RTR and
 * RTS, then a REP) or rdma_reject (a REJ: REJECTED on the active side); the active side moves its
 * QP to RTR and RTS on the REP, sends an RTU and gets ESTABLISHED, the passive side on the RTU. A
 * connect to a port nobody listens on is REJECTED (invalid service ID), as on a fabric; the process
 * of rank SOFTVERBS_CM_REJECT rejects every request before its application sees it. rdma_disconnect
 * sends a DREQ: both QPs go to the error state and both sides get DISCONNECTED, as they do when the
 * peer's process ends. The QPs are the verbs emulator's, so one connected to the wrong remote QP
 * passes no data (its HELLO fails the check against the RTR settings). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "softrdmacm.h"

#define RNR_TIMER 12
#define CM_TIMEOUT 14 /* the local ACK timeout the CM sets: 67 ms */

int softrdmacm__send(sv_cm_id *id, int kind, uint32_t status, const void *pdata, uint8_t len)
{
    cm_msg m = {.magic = CM_MAGIC, .kind = (uint32_t)kind, .status = status};
    struct ibv_port_attr pa;
    size_t off = 0;
    if (id->fd < 0)
        return -1;
    if (id->id.qp) {
        memset(&pa, 0, sizeof pa);
        ibv_query_port(id->id.verbs, 1, &pa);
        m.qpn = id->id.qp->qp_num;
        m.mtu = pa.active_mtu;
        m.lid = pa.lid;
        m.qp_type = (uint8_t)id->id.qp->qp_type;
    }
    m.psn = id->psn;
    m.gid = id->path.sgid;
    m.retry = id->retry;
    m.rnr_retry = id->rnr_retry;
    if (len > CM_PDATA_MAX)
        len = CM_PDATA_MAX;
    memcpy(m.pdata, pdata ? pdata : "", pdata ? len : 0);
    m.pdata_len = pdata ? len : 0;
    /* Small, on loopback: it fits the socket buffer, so a short wait at most. */
    while (off < sizeof m) {
        ssize_t n = send(id->fd, (char *)&m + off, sizeof m - off, MSG_NOSIGNAL);
        if (n < 0 && errno != EINTR && errno != EAGAIN)
            return -1;
        off += n > 0 ? (size_t)n : 0;
    }
    return 0;
}

CM_EXPORT int rdma_create_qp(struct rdma_cm_id *cid, struct ibv_pd *pd,
                             struct ibv_qp_init_attr *attr)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                            .port_num = cid->port_num,
                            .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                               IBV_ACCESS_REMOTE_READ};
    struct ibv_qp *qp;
    int rc;
    if (!cid->verbs || !pd || pd->context != cid->verbs)
        return softrdmacm__fail(EINVAL, "rdma_create_qp: the PD is not of the id's device");
    if (!(qp = ibv_create_qp(pd, attr)))
        return -1;
    if ((rc = ibv_modify_qp(
             qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))) {
        ibv_destroy_qp(qp);
        return softrdmacm__fail(rc, "rdma_create_qp: INIT");
    }
    cid->qp = qp;
    cid->qp_type = attr->qp_type;
    return 0;
}

CM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *cid)
{
    if (cid->qp)
        ibv_destroy_qp(cid->qp);
    cid->qp = NULL;
}

/* Our QP to RTR and RTS towards the peer that sent m. */
static int bring_up(sv_cm_id *id, const cm_msg *m, uint8_t retry, uint8_t rnr_retry)
{
    struct ibv_qp *qp = id->id.qp;
    struct ibv_port_attr pa;
    int rc_qp = qp->qp_type == IBV_QPT_RC;
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
                            .dest_qp_num = m->qpn,
                            .rq_psn = m->psn,
                            .max_dest_rd_atomic = 1,
                            .min_rnr_timer = RNR_TIMER};
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    memset(&pa, 0, sizeof pa);
    ibv_query_port(id->id.verbs, 1, &pa);
    a.path_mtu = pa.active_mtu < (enum ibv_mtu)m->mtu ? pa.active_mtu : (enum ibv_mtu)m->mtu;
    a.ah_attr.port_num = 1;
    if (pa.link_layer == IBV_LINK_LAYER_INFINIBAND) { /* within a subnet: by LID, no GRH */
        a.ah_attr.dlid = m->lid;
    } else {
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = m->gid;
        a.ah_attr.grh.sgid_index = (uint8_t)id->sgid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    if (rc_qp)
        mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    if (ibv_modify_qp(qp, &a, mask))
        return -1;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = id->psn;
    a.timeout = CM_TIMEOUT;
    a.retry_cnt = retry;
    a.rnr_retry = rnr_retry;
    a.max_rd_atomic = 1;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (rc_qp)
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    return ibv_modify_qp(qp, &a, mask) ? -1 : 0;
}

static void qp_error(sv_cm_id *id)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
    if (id->id.qp)
        ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE);
}

static uint32_t new_psn(void)
{
    return (uint32_t)rand() & 0xffffff;
}

CM_EXPORT int rdma_connect(struct rdma_cm_id *cid, struct rdma_conn_param *param)
{
    sv_cm_id *id = (sv_cm_id *)cid;
    int fd;
    if (id->state != ID_ROUTE)
        return softrdmacm__fail(EINVAL, "rdma_connect: the route is not resolved");
    if (!cid->qp)
        return softrdmacm__fail(EINVAL,
                                "rdma_connect: the emulator needs a QP made by rdma_create_qp");
    if (param && param->private_data_len > CM_PDATA_MAX)
        return softrdmacm__fail(EINVAL, "rdma_connect: %u bytes of private data, at most %d",
                                param->private_data_len, CM_PDATA_MAX);
    id->psn = new_psn();
    id->retry = param ? param->retry_count : 7;
    id->rnr_retry = param ? param->rnr_retry_count : 7;
    id->state = ID_CONNECTING;
    if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
        return softrdmacm__fail(errno, "rdma_connect: socket");
    /* Loopback: a listener's kernel completes the connection at once, even if it is busy. */
    if (connect(fd, &cid->route.addr.dst_addr, sizeof cid->route.addr.dst_sin) < 0) {
        close(fd);
        id->state = ID_DONE;
        softrdmacm__event(id, RDMA_CM_EVENT_REJECTED, CM_REJ_NO_LISTENER, NULL);
        return 0;
    }
    if (softrdmacm__watch(id, fd) < 0) {
        close(fd);
        return softrdmacm__fail(errno, "rdma_connect: epoll");
    }
    if (softrdmacm__send(id, CM_REQ, 0, param ? param->private_data : NULL,
                         param ? param->private_data_len : 0) < 0) {
        id->state = ID_DONE;
        softrdmacm__event(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET, NULL);
    }
    return 0;
}

void softrdmacm__accept_fd(sv_cm_id *listener)
{
    struct rdma_cm_id *child;
    sv_cm_id *id;
    int fd;
    while ((fd = accept4(listener->fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
        socklen_t len = sizeof(struct sockaddr_in);
        if (rdma_create_id(listener->id.channel, &child, listener->id.context, RDMA_PS_TCP)) {
            close(fd);
            continue;
        }
        id = (sv_cm_id *)child;
        id->listener = listener;
        id->state = ID_REQ_WAIT;
        child->verbs = listener->id.verbs;
        child->port_num = 1;
        id->path = listener->path;
        id->sgid_index = listener->sgid_index;
        getsockname(fd, &child->route.addr.src_addr, &len);
        len = sizeof(struct sockaddr_in);
        getpeername(fd, &child->route.addr.dst_addr, &len);
        if (softrdmacm__watch(id, fd) < 0) {
            close(fd);
            id->fd = -1;
            rdma_destroy_id(child);
        }
    }
}

CM_EXPORT int rdma_accept(struct rdma_cm_id *cid, struct rdma_conn_param *param)
{
    sv_cm_id *id = (sv_cm_id *)cid;
    if (id->state != ID_REQ_RCVD)
        return softrdmacm__fail(EINVAL, "rdma_accept: no connection request to accept");
    if (!cid->qp)
        return softrdmacm__fail(EINVAL,
                                "rdma_accept: the emulator needs a QP made by rdma_create_qp");
    if ((int)cid->qp->qp_type != id->peer.qp_type)
        return softrdmacm__fail(EINVAL, "rdma_accept: QP type %d, the request's is %d",
                                cid->qp->qp_type, id->peer.qp_type);
    id->psn = new_psn();
    if (bring_up(id, &id->peer, id->peer.retry, param ? param->rnr_retry_count : 7))
        return softrdmacm__fail(errno ? errno : EINVAL, "rdma_accept: QP to RTR/RTS");
    if (softrdmacm__send(id, CM_REP, 0, param ? param->private_data : NULL,
                         param ? param->private_data_len : 0) < 0)
        return softrdmacm__fail(ECONNRESET, "rdma_accept: the requester is gone");
    id->state = ID_ACCEPTED;
    return 0;
}

CM_EXPORT int rdma_reject(struct rdma_cm_id *cid, const void *pdata, uint8_t len)
{
    sv_cm_id *id = (sv_cm_id *)cid;
    if (id->state != ID_REQ_RCVD)
        return softrdmacm__fail(EINVAL, "rdma_reject: no connection request to reject");
    id->state = ID_DONE;
    softrdmacm__send(id, CM_REJ, CM_REJ_CONSUMER, pdata, len);
    return 0;
}

CM_EXPORT int rdma_disconnect(struct rdma_cm_id *cid)
{
    sv_cm_id *id = (sv_cm_id *)cid;
    if (id->state != ID_ESTABLISHED && id->state != ID_ACCEPTED && id->state != ID_CONNECTING)
        return softrdmacm__fail(EINVAL, "rdma_disconnect: not connected");
    qp_error(id);
    softrdmacm__send(id, CM_DREQ, 0, NULL, 0);
    id->state = ID_DONE;
    softrdmacm__event(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
    return 0;
}

static void on_req(sv_cm_id *id, const cm_msg *m)
{
    long reject = -1;
    const char *v = getenv("SOFTVERBS_CM_REJECT");
    if (v && *v)
        reject = strtol(v, NULL, 10);
    id->peer = *m;
    if (reject == softrdmacm__rank()) {
        softrdmacm__send(id, CM_REJ, CM_REJ_CONSUMER, NULL, 0);
        id->state = ID_DONE;
        return;
    }
    id->state = ID_REQ_RCVD;
    softrdmacm__event(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, m);
}

static void on_rep(sv_cm_id *id, const cm_msg *m)
{
    if (bring_up(id, m, id->retry, id->rnr_retry)) {
        softrdmacm__send(id, CM_REJ, CM_REJ_CONSUMER, NULL, 0);
        id->state = ID_DONE;
        softrdmacm__event(id, RDMA_CM_EVENT_CONNECT_ERROR, -EINVAL, NULL);
        return;
    }
    softrdmacm__send(id, CM_RTU, 0, NULL, 0);
    id->state = ID_ESTABLISHED;
    softrdmacm__event(id, RDMA_CM_EVENT_ESTABLISHED, 0, m);
}

void softrdmacm__on_msg(sv_cm_id *id, const cm_msg *m)
{
    int st = id->state;
    if (!m || m->magic != CM_MAGIC) { /* the peer is gone, or not a CM */
        softrdmacm__unwatch(id);
        id->state = ID_DONE;
        if (st == ID_ESTABLISHED || st == ID_ACCEPTED) {
            qp_error(id);
            softrdmacm__event(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
        } else if (st == ID_CONNECTING) {
            softrdmacm__event(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET, NULL);
        }
        return;
    }
    if (m->kind == CM_REQ && st == ID_REQ_WAIT)
        on_req(id, m);
    else if (m->kind == CM_REP && st == ID_CONNECTING)
        on_rep(id, m);
    else if (m->kind == CM_RTU && st == ID_ACCEPTED) {
        id->state = ID_ESTABLISHED;
        softrdmacm__event(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
    } else if (m->kind == CM_REJ && st == ID_CONNECTING) {
        id->state = ID_DONE;
        softrdmacm__event(id, RDMA_CM_EVENT_REJECTED, (int)m->status, m);
    } else if (m->kind == CM_DREQ && (st == ID_ESTABLISHED || st == ID_ACCEPTED)) {
        qp_error(id);
        id->state = ID_DONE;
        softrdmacm__event(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
    }
}
