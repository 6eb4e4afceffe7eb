/* backends/rdma/route.c - ring mode: messages to ranks with no link go through the neighbours, passed on.
 *
 * Ring mode links each rank to its two ring neighbours only (several cables each). A message to any
 * other rank travels whole, unstriped, on the first link towards it, the shorter way round (as the
 * TCP ring backend, backends/ring/ring.c), its frames carrying origin and destination. Each rank on
 * the way takes the message into a block of its own and queues it on, behind what that link already
 * carries, so messages between a pair keep their order. The destination matches it against the
 * receives posted for its origin. Routed traffic is the small traffic of trees, barriers and split
 * set-up, or point-to-point between distant ranks: the bandwidth collectives talk to neighbours. */
#include <stdlib.h>

#include "backends/net/hop.h"
#include "rdma_impl.h"

rdma_link *tether__rdma_hop(rdma_ep *ep, int dst)
{
    rdma_peer *pe = &ep->peers[ep->ring ? tether__net_next_hop(ep->rank, ep->size, dst) : dst];
    return pe->nlinks ? &pe->link[0] : NULL;
}

/* m, a whole message for another rank that came in on from, goes on towards it; m is then the
 * forward's (freed once in frames). */
int tether__rdma_forward(rdma_ep *ep, rdma_link *from, tether__rxmsg *m)
{
    int src = (int)from->cur_src, dst = (int)from->cur_dst;
    rdma_link *next = tether__rdma_hop(ep, dst);
    struct tether_req *r;
    if (!next || next->peer == from->peer || ep->peers[next->peer].eof) {
        tether__rxcache_put(&ep->rxcache, m);
        return tether__rdma_break(ep, TETHER_EPEER, "rdma: rank %d cannot pass on a message from "
                                  "rank %d to rank %d: %s", ep->rank, src, dst,
                                  next && ep->peers[next->peer].eof
                                      ? "the next rank on the way has left the ring"
                                      : "it came from the way it should go (ranks disagree on the "
                                        "ring: check every rank reads the same device matrix)");
    }
    if (!(r = calloc(1, sizeof *r))) {
        unsigned long long len = (unsigned long long)m->len;
        tether__rxcache_put(&ep->rxcache, m);
        return tether__rdma_break(ep, TETHER_ENOMEM, "rdma: rank %d: out of memory passing on %llu "
                                  "bytes from rank %d to rank %d", ep->rank, len, src, dst);
    }
    *r = (struct tether_req){.is_send = 1, .peer = dst, .buf = m->buf, .len = (size_t)m->len,
                             .tag = m->tag, .src = (uint32_t)src, .dst = (uint32_t)dst, .owned = m};
    return tether__rdma_send(ep, r);
}
