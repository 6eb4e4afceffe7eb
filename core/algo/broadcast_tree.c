/* core/algo/broadcast_tree.c - broadcast over a binomial tree (c->algo TREE), for small buffers.
 *
 * With v = rank - root mod n, v receives from v with its lowest set bit cleared, then sends to
 * v + 2^j for every 2^j below that bit, largest subtree first: log2(n) latencies, the whole buffer
 * per edge, so one segment (broadcast_pipeline.c). */
#include "core/algo/algo.h"

int tether__broadcast_tree(tether_group *g, const tether__coll *c)
{
    int n = g->size, v = tether__mod(g->rank - c->root, n);
    tether__bcast_shape t;
    tether__bcast_shape_init(&t);
    int low = 1; /* lowest set bit of v; for the root, the first power of two >= n */
    while (low < n && !(v & low))
        low <<= 1;
    if (v > 0)
        t.parent = tether__bcast_rank(g, c, v - low);
    for (int bit = low >> 1; bit > 0; bit >>= 1)
        if (v + bit < n)
            t.children[t.nchildren++] = tether__bcast_rank(g, c, v + bit);
    return tether__bcast_pipeline(g, c, &t, 1);
}
