/* core/algo/reducescatter_ring.c - reduce-scatter around the ring: n - 1 steps of pass-and-reduce.
 *
 * Block b of send (recv_count elements) is reduced across ranks into rank b's recv. At step t every
 * rank sends its partial sum of one block to its successor, which adds its own contribution and
 * passes it on at step t + 1; the chain for block b ends at rank b after n - 1 steps. Every rank
 * sends and receives (n - 1) blocks. Partial sums of other ranks' blocks live in a work buffer;
 * the own block is reduced straight into recv. Pipelined in segments and run in both directions
 * (half of every block each) by core/algo/ring_pipeline.c, reduce-scatter steps only. */
#include <stdlib.h>

#include "core/algo/algo.h"

int tether__reducescatter_ring(tether_group *g, const tether__coll *c)
{
    int n = g->size;
    size_t es = c->esize, block = c->count * es;
    char *work = tether__scratch(g, block * (size_t)n, "reduce-scatter partial sums");
    if (!work)
        return TETHER_ENOMEM;
    tether__ring_plan p;
    int rc = tether__ring_plan_init(g, &p);
    if (rc < 0) {
        tether__scratch_free(g, work);
        return rc;
    }
    for (int d = 0; d < p.ndirs; d++) {
        size_t half_off, half_len;
        tether__part(c->count, (size_t)p.ndirs, (size_t)d, &half_off, &half_len);
        for (int j = 0; j < n; j++) {
            size_t b = (size_t)tether__ring_rank_at(n, d, j), off = b * c->count + half_off;
            char *dst = (int)b == g->rank ? tether__at(c->recv, half_off * es) : work + off * es;
            p.dir[d].chunks[j] =
                (tether__span){.src = tether__at(c->send, off * es), .dst = dst, .len = half_len};
        }
    }
    p.first_step = 0;
    p.last_step = n - 1;
    rc = tether__ring_run(g, c, &p);
    tether__ring_plan_free(g, &p);
    tether__scratch_free(g, work);
    return rc;
}
