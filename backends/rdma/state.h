/* backends/rdma/state.h - the endpoint's links in turn, its failure, and whether peers that
 * close are done (state.c). */
#ifndef TETHER_RDMA_STATE_H
#define TETHER_RDMA_STATE_H

#include "rdma_impl.h"

/* Every link of every peer: for (RDMA_EACH_LINK(ep, l)) { ... } */
#define RDMA_EACH_LINK(ep, l)                                                                      \
    rdma_link *l = tether__rdma_first_link(ep);                                                    \
    l;                                                                                             \
    l = tether__rdma_next_link(ep, l)
rdma_link *tether__rdma_first_link(rdma_ep *ep);
rdma_link *tether__rdma_next_link(rdma_ep *ep, rdma_link *l);

/* Break ep (first failure wins) and return code; later calls return it. Caller holds
 * ep->mu. */
int tether__rdma_break(rdma_ep *ep, int code, const char *fmt, ...) TETHER__PRINTF(3, 4);
/* Whether every frame closing peer pe sent is in and handled here: those of its own messages, or
 * (final) every one, after its last bye; or it never will be, its process having ended. */
int tether__rdma_all_in(const rdma_peer *pe, int final);
/* A peer that closed normally while a receive from it waits on link l: EPEER once every frame it
 * sent there is in. */
int tether__rdma_gone_check(rdma_ep *ep, rdma_link *l);
/* Ring mode: EPEER when a receive waits for a rank reached through neighbours that have all closed
 * for good. */
int tether__rdma_stranded_check(rdma_ep *ep);

#endif
