/* core/algo/allgather_neighbor.c - all-gather for small blocks where only ring neighbours are
 * linked: the neighbour exchange (neighbor_exchange.c) straight into recv, ceil((n - 1) / 2) steps
 * of at most one block each way, where the ring all-gather takes n - 1 (select.c: small results,
 * transports without TETHER__CAP_DIRECT). Rank b's block lands at recv + b * count; send may be
 * recv's own block (in place). */
#include <string.h>

#include "core/algo/algo.h"

int tether__allgather_neighbor(tether_group *g, const tether__coll *c)
{
    size_t block = c->count * c->esize;
    char *own = tether__at(c->recv, (size_t)g->rank * block);
    if (block && own != (const char *)c->send)
        memcpy(own, c->send, block);
    tether__nb_blocks b = {.base = c->recv, .stride = block, .bytes = block};
    return tether__neighbor_exchange(g, &b);
}
