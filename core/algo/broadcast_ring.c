/* core/algo/broadcast_ring.c - broadcast along the ring order as a pipelined chain (c->algo RING),
 * for large buffers (select.c chooses it from TETHER_TREE_BELOW and the links).
 *
 * With v = rank - root mod n, v receives from v - 1 and forwards to v + 1 segment by segment
 * (broadcast_pipeline.c), so the time is about one buffer transfer plus n - 1 segment hops, and
 * every link carries the buffer once. A chain of two ranks has no hop to overlap, so it sends one
 * message: segments there only add frames and waits (measured: docs/perf/notes.md,
 * core/algo/broadcast_ring.c). */
#include "core/algo/algo.h"

int tether__broadcast_ring(tether_group *g, const tether__coll *c)
{
    int n = g->size, v = tether__mod(g->rank - c->root, n);
    tether__bcast_shape t;
    tether__bcast_shape_init(&t);
    if (v > 0)
        t.parent = tether__bcast_rank(g, c, v - 1);
    if (v + 1 < n)
        t.children[t.nchildren++] = tether__bcast_rank(g, c, v + 1);
    size_t nseg = n > 2 ? tether__nsegments(c->count, c->esize, TETHER__SEG_BYTES) : 1;
    return tether__bcast_pipeline(g, c, &t, nseg);
}
