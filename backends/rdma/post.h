/* backends/rdma/post.h - work requests on a link's QP (post.c). */
#ifndef TETHER_RDMA_POST_H
#define TETHER_RDMA_POST_H

#include "rdma_impl.h"

/* Caller holds ep->mu. A work request's id holds the peer (bits 32-63), the link's QP generation
 * (28-31), its kind (24-27), the lane (16-23) and the slot (0-15). */
#define RDMA_WR_RECV 1u
#define RDMA_WR_SEND 2u
#define RDMA_WR_WRITE 3u /* its slot field: the rendezvous id */
int tether__rdma_post_recv(rdma_ep *ep, rdma_link *l, int slot);
/* Post send slot slot (len bytes, its frame in it) on l's QP, once more or for the first time. */
int tether__rdma_post_slot(rdma_ep *ep, rdma_link *l, int slot, size_t len);
/* RDMA WRITE of part pt (registered: pt->mr) to pt->raddr, pt->rkey, rendezvous id id: signaled. */
int tether__rdma_post_write(rdma_ep *ep, rdma_link *l, const rdma_part *pt, int id);
/* One hold on send slot slot ended (a completion, an acknowledgement): free with the last. */
void tether__rdma_slot_unref(rdma_link *l, int slot);

#endif
