/* backends/rdma/post.c - work requests on a link's QP: a receive slot posted, a send slot posted
 * (a first time or again, for a resend), a rendezvous's RDMA WRITE, a send slot's holds counted
 * down. The data path (io.c) and
 * UC's resends (retransmit.c) both post through here, and this calls neither, so neither calls the
 * other back. */
#include <string.h>

#include "device.h"
#include "post.h"
#include "rdma_impl.h"
#include "state.h"

/* What a completion tells of its work request: the peer, then the link's QP generation (4 bits:
 * rejoin.c), the kind (4), the lane (8) and the slot (16). */
static uint64_t wr_id(const rdma_link *l, unsigned kind, int slot)
{
    return (uint64_t)l->peer << 32 | (uint64_t)(l->gen & 0xf) << 28 | (uint64_t)kind << 24 |
           (uint64_t)l->lane << 16 | (uint32_t)slot;
}

int tether__rdma_post_recv(rdma_ep *ep, rdma_link *l, int slot)
{
    struct ibv_sge sge = {.addr = (uintptr_t)tether__rdma_slot(l, slot),
                          .length = SLOT_SIZE,
                          .lkey = l->dev->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = wr_id(l, RDMA_WR_RECV, slot), .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad = NULL;
    int rc = ibv_post_recv(l->qp, &wr, &bad);
    if (rc)
        return tether__rdma_break(ep, TETHER_ENET,
                                  "rdma: ibv_post_recv for rank %d on %s failed: "
                                  "%s",
                                  l->peer, l->dev->name, strerror(rc));
    return TETHER_OK;
}

int tether__rdma_post_slot(rdma_ep *ep, rdma_link *l, int slot, size_t len)
{
    unsigned char *p = tether__rdma_slot(l, slot);
    struct ibv_sge sge = {.addr = (uintptr_t)p, .length = (uint32_t)len, .lkey = l->dev->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = wr_id(l, RDMA_WR_SEND, slot),
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND,
                             .send_flags =
                                 IBV_SEND_SIGNALED | (len <= l->max_inline ? IBV_SEND_INLINE : 0)};
    struct ibv_send_wr *bad = NULL;
    int rc = ibv_post_send(l->qp, &wr, &bad);
    if (rc)
        return tether__rdma_break(ep, TETHER_ENET,
                                  "rdma: ibv_post_send of %zu bytes to rank %d "
                                  "on %s failed: %s",
                                  len, l->peer, l->dev->name, strerror(rc));
    return TETHER_OK;
}

int tether__rdma_post_write(rdma_ep *ep, rdma_link *l, const rdma_part *pt, int id)
{
    struct ibv_sge sge = {.addr = (uintptr_t)(pt->req->buf + pt->lo),
                          .length = (uint32_t)pt->len,
                          .lkey = pt->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = wr_id(l, RDMA_WR_WRITE, id),
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED,
                             .wr.rdma = {.remote_addr = pt->raddr, .rkey = pt->rkey}};
    struct ibv_send_wr *bad = NULL;
    int rc = ibv_post_send(l->qp, &wr, &bad);
    if (rc)
        return tether__rdma_break(ep, TETHER_ENET,
                                  "rdma: ibv_post_send of an RDMA WRITE of %zu bytes to rank %d "
                                  "on %s failed: %s",
                                  pt->len, l->peer, l->dev->name, strerror(rc));
    return TETHER_OK;
}

void tether__rdma_slot_unref(rdma_link *l, int slot)
{
    if (--l->slot_refs[slot - RECV_SLOTS] == 0)
        l->free_send[l->nfree_send++] = slot;
}
