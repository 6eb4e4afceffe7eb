/* core/algo/broadcast_neighbor.c - broadcast for small buffers where only ring neighbours are
 * linked: from the root both ways round the ring at once, ceil((n - 1) / 2) hops to the far side,
 * where a binomial tree's messages to ranks 2, 4, ... away are forwarded hop by hop.
 *
 * With v = rank - root mod n, the ranks v = 1 .. n / 2 receive from v - 1 (the data going right,
 * the opposite rank of an even n included) and the others from v + 1 (going left), each passing the
 * buffer on to the next rank the same way (broadcast_pipeline.c, one segment). Only the buffer
 * travels: the signature chain (core/coll.c) tells the ranks that send nothing to a rank that
 * disagreed, where the neighbour exchange's empty blocks had cost a message each way per step. */
#include "core/algo/algo.h"

int tether__broadcast_neighbor(tether_group *g, const tether__coll *c)
{
    int n = g->size, v = tether__mod(g->rank - c->root, n), half = n / 2;
    tether__bcast_shape t;
    tether__bcast_shape_init(&t);
    if (v == 0) {
        t.children[t.nchildren++] = tether__bcast_rank(g, c, 1);
        if (n - 1 > half)
            t.children[t.nchildren++] = tether__bcast_rank(g, c, n - 1);
    } else if (v <= half) {
        t.parent = tether__bcast_rank(g, c, v - 1);
        if (v + 1 <= half)
            t.children[t.nchildren++] = tether__bcast_rank(g, c, v + 1);
    } else {
        t.parent = tether__bcast_rank(g, c, (v + 1) % n);
        if (v - 1 > half)
            t.children[t.nchildren++] = tether__bcast_rank(g, c, v - 1);
    }
    return tether__bcast_pipeline(g, c, &t, 1);
}
