/* backends/rdma/failover.h - a cable out of use, its frames carried by its peer's other links
 * (failover.c). */
#ifndef TETHER_RDMA_FAILOVER_H
#define TETHER_RDMA_FAILOVER_H

#include "rdma_impl.h"

/* Caller holds ep->mu. l stopped carrying (why): out of use, the peer told; an error when it was
 * the peer's last. */
int tether__rdma_link_down(rdma_ep *ep, rdma_link *l, const char *why);
/* The peer says its link of ours on lane lane is out of use, having taken rx of our frames, for
 * the reason said (len bytes, not terminated; may be empty). */
int tether__rdma_peer_down(rdma_ep *ep, int peer, uint32_t lane, uint32_t rx, const char *said,
                           size_t len);

#endif
