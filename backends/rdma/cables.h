/* backends/rdma/cables.h - which cable carries a link's frames (cables.c: state only; calls
 * nothing). */
#ifndef TETHER_RDMA_CABLES_H
#define TETHER_RDMA_CABLES_H

#include "rdma_impl.h"

/* Caller holds ep->mu.
 * Whether l keeps data frames until acknowledged: on UC (resends), and on RC where its peer has
 * other links (a dead cable's unacknowledged frames go again on those). */
int tether__rdma_keeps(const rdma_ep *ep, const rdma_link *l);
/* A lane of l's peer moves between links (l left, or its first frame since it came back, io.c):
 * frames taken on any link from now on are handled only after those taken before, on every link,
 * as one link would keep them. */
void tether__rdma_fence(rdma_ep *ep, const rdma_link *l);

/* The live link carrying peer's work on lane k: k itself, or (dead) the peer's first live one. */
rdma_link *tether__rdma_carrier(rdma_ep *ep, rdma_link *l);
/* A dead sibling of live link l with frames or parts for l to carry, round robin; NULL: none. */
rdma_link *tether__rdma_orphan(rdma_ep *ep, rdma_link *l);
/* Whether dead link d still has work for a live sibling: kept frames not yet moved, or parts. */
int tether__rdma_orphaned(const rdma_link *d);

#endif
