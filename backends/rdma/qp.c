/* backends/rdma/qp.c - a link's queue pair: creation, RESET->INIT with its receives posted, then
 * RTR and RTS.
 *
 * Receives are posted at INIT, before the peer learns our QP number, so a peer that may send (it
 * has our RTS and its credits) always finds them. Every transition names its attributes on failure.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backends/net/socket.h"
#include "core/params.h"
#include "post.h"
#include "qp.h"
#include "rdma_impl.h"

/* Asked for first; a device without inline data (Apple's) refuses it and gets 0. */
#define INLINE_WANTED 64
#define RNR_TIMER 12  /* 0.64 ms: only matters if flow control were wrong */
#define RC_TIMEOUT 14 /* 4.096 us * 2^14 = 67 ms per try */

static const char *qp_kind(const rdma_ep *ep)
{
    return ep->uc ? "UC" : "RC";
}

static int modify_failed(rdma_ep *ep, const rdma_link *l, const char *to, int rc, const char *attrs)
{
    return tether__fail(TETHER_ENET,
                        "rdma: ibv_modify_qp(%s QP %u -> %s) for rank %d on %s failed: "
                        "%s (%s)",
                        qp_kind(ep), l->qp->qp_num, to, l->peer, l->dev->name, strerror(rc), attrs);
}

/* A link through rdma_cm gets its QP from the cm_id (cm.c), at INIT on the id's device. */
static struct ibv_qp *create_once(rdma_ep *ep, rdma_link *l, struct ibv_qp_init_attr *ia)
{
    return l->cm_id ? ep->cm_make_qp(ep, l, ia) : ep->ibv.create_qp(l->dev->pd, ia);
}

static struct ibv_qp *create(rdma_ep *ep, rdma_link *l, struct ibv_qp_init_attr *ia)
{
    struct ibv_qp *qp = create_once(ep, l, ia);
    if (!qp && errno == EINVAL && ia->cap.max_inline_data) {
        ia->cap.max_inline_data = 0;
        qp = create_once(ep, l, ia);
    }
    return qp;
}

int tether__rdma_qp_create(rdma_ep *ep, rdma_link *l)
{
    struct ibv_qp_init_attr ia = {.send_cq = l->dev->cq,
                                  .recv_cq = l->dev->cq,
                                  .qp_type = ep->uc ? IBV_QPT_UC : IBV_QPT_RC,
                                  .cap = {.max_send_wr = SEND_SLOTS + RV_MAX, /* + WRITEs */
                                          .max_recv_wr = RECV_SLOTS,
                                          .max_send_sge = 1,
                                          .max_recv_sge = 1,
                                          .max_inline_data = INLINE_WANTED}};
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT,
        .port_num = 1,
        /* RC: the peer's rendezvous WRITEs land in buffers registered for them (io.c) */
        .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | (ep->uc ? 0 : IBV_ACCESS_REMOTE_WRITE)};
    int rc;
    if (!(l->qp = create(ep, l, &ia))) {
        int e = errno;
        char hint[200] = "";
        if (e == ENOMEM)
            snprintf(hint, sizeof hint,
                     "; the device allows %d QPs (Apple's about 10) and this rank "
                     "needs one per peer on it: spread the peers over more devices in "
                     "%s",
                     l->dev->max_qp, TETHER__VAR(IBV_DEVICES));
        return tether__fail(TETHER_ENET, "rdma: ibv_create_qp(%s, %s) for rank %d failed: %s%s",
                            l->dev->name, qp_kind(ep), l->peer, strerror(e), hint);
    }
    l->max_inline = ia.cap.max_inline_data;
    rc = l->cm_id
             ? 0
             : ep->ibv.modify_qp(
                   l->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc)
        return modify_failed(ep, l, "INIT", rc, "port 1, pkey_index 0, local write");
    for (int slot = 0; slot < RECV_SLOTS; slot++)
        TRY(tether__rdma_post_recv(ep, l, slot));
    for (int i = 0; i < SEND_SLOTS; i++)
        l->free_send[i] = RECV_SLOTS + i;
    l->nfree_send = SEND_SLOTS;
    l->credits = DATA_SLOTS;
    return TETHER_OK;
}

static int to_rtr(rdma_ep *ep, rdma_link *l, const rdma_qp_info *peer, enum ibv_mtu mtu)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR,
                            .path_mtu = mtu,
                            .dest_qp_num = peer->qpn,
                            .rq_psn = peer->psn,
                            .min_rnr_timer = RNR_TIMER};
    int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    char dgid[INET6_ADDRSTRLEN], attrs[256];
    int rc;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.dgid = peer->gid;
    a.ah_attr.grh.sgid_index = (uint8_t)l->dev->gid_index;
    a.ah_attr.grh.hop_limit = 1;
    if (!ep->uc)
        mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    if ((rc = ep->ibv.modify_qp(l->qp, &a, mask)) == 0)
        return TETHER_OK;
    inet_ntop(AF_INET6, peer->gid.raw, dgid, sizeof dgid);
    snprintf(attrs, sizeof attrs, "path_mtu %d, dest_qp_num %u, rq_psn %u, sgid_index %d, dgid %s",
             (int)mtu, peer->qpn, peer->psn, l->dev->gid_index, dgid);
    return modify_failed(ep, l, "RTR", rc, attrs);
}

static int to_rts(rdma_ep *ep, rdma_link *l, uint32_t psn)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS,
                            .sq_psn = psn,
                            .timeout = RC_TIMEOUT,
                            .retry_cnt = 7,
                            .rnr_retry = 7};
    int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    char attrs[96];
    int rc;
    if (!ep->uc)
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    if ((rc = ep->ibv.modify_qp(l->qp, &a, mask)) == 0)
        return TETHER_OK;
    snprintf(attrs, sizeof attrs, "sq_psn %u%s", psn, ep->uc ? "" : ", timeout 14, retry 7/7");
    return modify_failed(ep, l, "RTS", rc, attrs);
}

rdma_qp_info tether__rdma_qp_mine(const rdma_ep *ep, const rdma_link *l)
{
    uint32_t psn = (uint32_t)(tether__net_now_ms() * 2654435761u ^ (uint64_t)ep->rank << 12 ^
                              (uint64_t)l->peer << 4 ^ (uint64_t)l->lane) &
                   0xffffff;
    return (rdma_qp_info){
        .qpn = l->qp->qp_num, .psn = psn, .gid = l->dev->gid, .mtu = (uint32_t)l->dev->mtu};
}

int tether__rdma_qp_connect(rdma_ep *ep, rdma_link *l, const rdma_qp_info *mine,
                            const rdma_qp_info *peer)
{
    enum ibv_mtu mtu = mine->mtu < peer->mtu ? (enum ibv_mtu)mine->mtu : (enum ibv_mtu)peer->mtu;
    TRY(to_rtr(ep, l, peer, mtu));
    return to_rts(ep, l, mine->psn);
}
