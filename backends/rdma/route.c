/* backends/rdma/route.c - ring mode: messages to ranks with no link go through the neighbours,
 * passed on.
 *
 * Ring mode links each rank to its two ring neighbours only (several cables each). A message to any
 * other rank travels whole, unstriped, on the first link towards it, the shorter way round (as the
 * TCP ring backend, backends/ring/ring.c), its frames carrying origin and destination. Each rank on
 * the way passes each frame on as it arrives, in arrival order, so messages between a pair keep
 * their order (io.c: never the whole message held, never behind the rank's own messages). The
 * destination matches it against the receives posted for its origin. Routed traffic is the small
 * traffic of trees, barriers and split set-up, or point-to-point between distant ranks: the
 * bandwidth collectives talk to neighbours. This file only says which way: the data path (io.c)
 * passes messages on. */
#include "route.h"
#include "backends/net/hop.h"
#include "rdma_impl.h"

rdma_link *tether__rdma_hop(rdma_ep *ep, int dst)
{
    rdma_peer *pe = &ep->peers[ep->ring ? tether__net_next_hop(ep->rank, ep->size, dst) : dst];
    return pe->nlinks ? &pe->link[0] : NULL;
}
