/* core/algo/allgather_direct.c - all-gather over a full mesh: every block goes to every rank at
 * once.
 *
 * One step: each rank sends its own block to every peer (in the order me + 1, me + 2, ... so no
 * rank is everyone's first target), then posts a receive from every peer straight into that peer's
 * place in recv. The same bytes as the ring in one step instead of n - 1; it wants a direct link to
 * every peer (TETHER__CAP_DIRECT). tether__ag_direct is also the second half of the direct
 * all-reduce, where blocks may travel as bfloat16 through a staging buffer. */
#include <string.h>

#include "core/algo/algo.h"
#include "core/batch.h"

static int exchange(tether_group *g, const tether__wire *w, const char *mine,
                    const tether__span *blocks, char *stage, uint32_t step, tether__req **reqs)
{
    int n = g->size, me = g->rank;
    tether__batch b;
    tether__batch_init(&b, g);
    /* the sends first: the receives' requests are then made while the blocks travel */
    const void *bytes =
        tether__wire_pack(w, mine, tether__at(stage, blocks[me].off * w->wsize), blocks[me].len);
    for (int s = 1; s < n; s++) {
        int q = (me + s) % n;
        TRY(tether__batch_send(&b, q, bytes, blocks[me].len * w->wsize, step, &reqs[n + q]));
    }
    for (int s = 1; s < n; s++) {
        int q = (me - s + n) % n;
        void *into = w->bf16 ? tether__at(stage, blocks[q].off * w->wsize) : blocks[q].dst;
        TRY(tether__batch_recv(&b, q, into, blocks[q].len * w->wsize, step, &reqs[q]));
    }
    TRY(tether__batch_post(&b));
    /* the rank's own block, while the peers read or receive theirs (all-gather; in the
     * all-reduce it is in place already) */
    if (!w->bf16 && blocks[me].dst != mine && blocks[me].len)
        memcpy(blocks[me].dst, mine, blocks[me].len * w->wsize);
    TRY(tether__waitall(g, reqs, 2 * n));
    for (int q = 0; q < n && w->bf16; q++)
        if (q != me)
            tether__wire_unpack(w, blocks[q].dst, stage + blocks[q].off * w->wsize, blocks[q].len);
    return TETHER_OK;
}

int tether__ag_direct(tether_group *g, const tether__coll *c, const char *mine,
                      const tether__span *blocks, char *stage, uint32_t step)
{
    tether__wire w = tether__wire_of(c);
    tether__req_local local;
    tether__req **reqs = tether__req_slots(g, &local, 2 * (size_t)g->size, "request slots");
    if (!reqs)
        return TETHER_ENOMEM;
    int rc = tether__algo_abort(g, exchange(g, &w, mine, blocks, stage, step, reqs));
    tether__req_slots_free(g, reqs, &local);
    return rc;
}

int tether__allgather_direct(tether_group *g, const tether__coll *c)
{
    int n = g->size;
    size_t block = c->count * c->esize;
    tether__small small; /* the table on the stack: a pool block cost a small call 6% */
    tether__span *blocks =
        tether__scratch_small(g, &small, sizeof *blocks * (size_t)n, "block table");
    if (!blocks)
        return TETHER_ENOMEM;
    for (int b = 0; b < n; b++)
        blocks[b] = (tether__span){.dst = tether__at(c->recv, (size_t)b * block),
                                   .len = c->count,
                                   .off = (size_t)b * c->count};
    /* the blocks are only copied into place (the direct all-reduce's second half, which copies
     * results too, keeps its steps unmarked: measured for the all-gather only) */
    int rc = tether__ag_direct(g, c, c->send, blocks, NULL, TETHER__STEP_COPY);
    tether__scratch_release(g, blocks, &small);
    return rc;
}
