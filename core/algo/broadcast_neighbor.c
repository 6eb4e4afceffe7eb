/* core/algo/broadcast_neighbor.c - broadcast for small buffers where only ring neighbours are
 * linked: from the root both ways round the ring at once, ceil((n - 1) / 2) hops to the far side,
 * where a binomial tree's messages to ranks 2, 4, ... away are forwarded hop by hop.
 *
 * It is the neighbour exchange (neighbor_exchange.c) in which the root's block is the buffer and
 * every other rank's block is empty: the buffer travels once over each link it needs, and the
 * empty blocks make every rank hear from every other within the call, which is the agreement on
 * the signature that a one-way broadcast needs (broadcast_pipeline.c). */
#include "core/algo/algo.h"

int tether__broadcast_neighbor(tether_group *g, const tether_coll *c)
{
    tether_nb_blocks b = {
        .base = c->recv, .stride = 0, .bytes = c->count * c->esize, .only = c->root};
    return tether__neighbor_exchange(g, &b);
}
