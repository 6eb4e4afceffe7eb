/* core/algo/allreduce_neighbor.c - all-reduce for small vectors where only ring neighbours are
 * linked: gather every rank's vector by the neighbour exchange (neighbor_exchange.c), then reduce
 * all n in rank order.
 *
 * ceil((n - 1) / 2) steps of one vector each way, where recursive doubling over such a ring sends
 * to ranks 2, 4, ... away and every message is forwarded hop by hop; the price is n vectors in and
 * reduced per rank, hence small vectors only (select.c, TETHER_TREE_BELOW). Every rank reduces the
 * same n vectors in the same order, 0 .. n - 1, so every rank computes the same bits, floats
 * included. With bf16 on the wire the vectors travel and are reduced as bfloat16 and the result is
 * rounded to bfloat16, as in the direct algorithm's one step. In place works: the own vector is
 * copied into its slot before recv is written. */
#include <string.h>

#include "core/algo/algo.h"

/* The n wire vectors side by side in scratch, each slot_bytes. */
static int run(tether_group *g, const tether__coll *c, char *scratch, size_t slot_bytes)
{
    tether__wire w = tether__wire_of(c);
    size_t bytes = c->count * w.wsize;
    char *mine = scratch + (size_t)g->rank * slot_bytes;
    const void *out = tether__wire_pack(&w, c->send, mine, c->count);
    if (out != mine && bytes)
        memcpy(mine, out, bytes);
    tether__nb_blocks b = {.base = scratch, .stride = slot_bytes, .bytes = bytes};
    TRY(tether__neighbor_exchange(g, &b));
    return tether__wire_reduce_slots(&w, c->recv, scratch, slot_bytes, g->size, c->count);
}

int tether__allreduce_neighbor(tether_group *g, const tether__coll *c)
{
    return tether__with_rank_slots(g, c, "neighbour vectors", run);
}
