/* core/algo/allgather_ring.c - all-gather around the ring: n - 1 steps, each passing on a block.
 *
 * Rank b's block lands at recv + b * count. At step t every rank forwards to its successor the
 * block it received at step t - 1 (its own at step 0), so after n - 1 steps every block has been
 * everywhere; every rank sends and receives (n - 1) blocks, the least possible. Blocks are cut
 * into segments and pipelined (core/algo/ring_pipeline.c, all-gather steps only); with n > 2 the
 * first half of every block goes clockwise and the second half counter-clockwise, using both links
 * of every rank. send may be recv's own block (in place). */
#include <string.h>

#include "core/algo/algo.h"

int tether__allgather_ring(tether_group *g, const tether__coll *c)
{
    int n = g->size;
    size_t es = c->esize, block = c->count * es;
    char *own = tether__at(c->recv, (size_t)g->rank * block);
    if (block && own != (const char *)c->send)
        memcpy(own, c->send, block);
    tether__ring_plan p;
    TRY(tether__ring_plan_init(g, &p));
    for (int d = 0; d < p.ndirs; d++) {
        size_t half_off, half_len;
        tether__part(c->count, (size_t)p.ndirs, (size_t)d, &half_off, &half_len);
        for (int j = 0; j < n; j++) {
            size_t b = (size_t)tether__ring_rank_at(n, d, j), off = b * c->count + half_off;
            p.dir[d].chunks[j] = (tether__span){.src = tether__at(c->recv, off * es),
                                                .dst = tether__at(c->recv, off * es),
                                                .len = half_len};
        }
    }
    p.first_step = n - 1;
    p.last_step = 2 * (n - 1);
    int rc = tether__ring_run(g, c, &p);
    tether__ring_plan_free(g, &p);
    return rc;
}
