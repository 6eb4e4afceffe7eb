/* core/algo/allreduce_ring.c - bandwidth-optimal all-reduce: ring reduce-scatter, then ring
 * all-gather.
 *
 * Every rank sends and receives 2 (n - 1) / n of the vector in total, whatever n is, which is the
 * least any all-reduce can move; the price is 2 (n - 1) steps of latency, so this is the algorithm
 * for large vectors. The vector is split in two halves when n > 2: the first half travels
 * clockwise, the second counter-clockwise, so both links of every rank carry data in both
 * directions at once. Each half is cut into one chunk per ring position; chunks are cut into
 * segments that flow through the pipeline of core/algo/ring_pipeline.c (reduce-scatter steps, then
 * all-gather steps, one stream per segment). In place works: the input is read from send only at
 * the first touch of each chunk. With bf16 on the wire the owner rounds its final chunk to bfloat16
 * before the all-gather, so every rank ends with the same bits. */
#include "core/algo/algo.h"

int tether__allreduce_ring(tether_group *g, const tether__coll *c)
{
    tether__ring_plan p;
    TRY(tether__ring_plan_init(g, &p));
    int n = g->size;
    for (int d = 0; d < p.ndirs; d++) {
        size_t half_off, half_len;
        tether__part(c->count, (size_t)p.ndirs, (size_t)d, &half_off, &half_len);
        for (int j = 0; j < n; j++) {
            size_t off, len;
            tether__part(half_len, (size_t)n, (size_t)j, &off, &len);
            off += half_off;
            p.dir[d].chunks[j] = (tether__span){.src = tether__at(c->send, off * c->esize),
                                                .dst = tether__at(c->recv, off * c->esize),
                                                .len = len};
        }
    }
    p.first_step = 0;
    p.last_step = 2 * (n - 1);
    p.round_final = c->wire_bf16;
    int rc = tether__ring_run(g, c, &p);
    tether__ring_plan_free(g, &p);
    return rc;
}
