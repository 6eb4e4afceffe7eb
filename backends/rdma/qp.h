/* backends/rdma/qp.h - a link's queue pair, created and connected (qp.c). */
#ifndef TETHER_RDMA_QP_H
#define TETHER_RDMA_QP_H

#include "rdma_impl.h"

/* A link with a cm_id gets its QP from rdma_cm, at INIT, and is connected by cm.c. */
int tether__rdma_qp_create(rdma_ep *ep, rdma_link *l);
int tether__rdma_qp_connect(rdma_ep *ep, rdma_link *l, const rdma_qp_info *mine,
                            const rdma_qp_info *peer);
/* What l's side tells the peer before RTR (its QP created). */
rdma_qp_info tether__rdma_qp_mine(const rdma_ep *ep, const rdma_link *l);

#endif
