/* backends/rdma/register.h - message buffers registered for a rendezvous (register.c). */
#ifndef TETHER_RDMA_REGISTER_H
#define TETHER_RDMA_REGISTER_H

#include "rdma_impl.h"

/* One registration per message, dropped when it completes: at most 2 * RV_MAX per link live
 * (RDMA_MRS_BOUND). Caller holds ep->mu.
 * Register the pages of len bytes at buf on l's device for access (0: read by a local WRITE): 0,
 * or ibv_reg_mr's errno (the caller says what it means: the sender sends frames instead). */
#define RDMA_MRS_BOUND(links) (2 * RV_MAX * (links))
int tether__rdma_reg(rdma_ep *ep, rdma_link *l, void *buf, size_t len, int access,
                     struct ibv_mr **mr);
void tether__rdma_dereg(rdma_ep *ep, struct ibv_mr **mr);
/* Request r is let go unfinished (the endpoint broke, or it closes): its parts leave every
 * rendezvous, their registrations dropped, so nothing looks into the freed request again. */
void tether__rdma_rv_forget(rdma_ep *ep, struct tether__req *r);
/* The endpoint broke: every rendezvous ends, its registrations dropped, before the caller hears
 * of the error and frees its buffers: a peer's late WRITE then fails on the stale rkey (a remote
 * access error on its QP) instead of landing in freed memory, and ours fails to read. */
void tether__rdma_rv_drop(rdma_ep *ep);

#endif
