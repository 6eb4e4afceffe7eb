/* core/algo/allreduce_tree.c - latency-optimal all-reduce: recursive doubling.
 *
 * In round k every rank swaps its whole vector with the rank whose number differs in bit k and
 * reduces: after log2(n) rounds everyone holds the full result. Each round is one message each
 * way, so small vectors finish in log2(n) latencies (the ring needs 2 (n - 1)); the price is that
 * every round moves the whole vector, hence TETHER_TREE_BELOW. Partners compute a OP b and b OP a,
 * which are the same bits for every op (commutative in IEEE arithmetic too), so all ranks agree.
 * Non-power-of-two sizes fold the extra ranks in first (core/algo/fold.c). With bf16 on the wire
 * each rank rounds its vector to bfloat16 before each exchange, so both partners reduce the same
 * numbers, and once more at the end, so the folded ranks get exactly what the others hold.
 * Steps: fold 0, rounds 1..log2(pof2), unfold log2(pof2) + 1. */
#include <string.h>

#include "core/algo/algo.h"
#include "core/reduce.h"

static int doubling(tether_group *g, const tether__coll *c, const tether__wire *w,
                    const tether__fold *f, char *buf, char *scratch, char *stage)
{
    size_t bytes = c->count * w->wsize;
    for (int k = 0; k < f->rounds; k++) {
        int partner = tether__fold_rank(f, f->newrank ^ (1 << k));
        if (w->bf16)
            tether__round_to_bf16((float *)buf, c->count);
        const void *out = tether__wire_pack(w, buf, stage, c->count);
        TRY(tether__sendrecv(g, partner, out, bytes, partner, scratch, bytes, (uint32_t)(1 + k)));
        TRY(tether__wire_reduce(w, buf, scratch, c->count));
    }
    if (w->bf16)
        tether__round_to_bf16((float *)buf, c->count);
    return TETHER_OK;
}

static int run(tether_group *g, const tether__coll *c, const tether__wire *w, char *scratch,
               char *stage)
{
    tether__fold f = tether__fold_of(g);
    char *buf = c->recv;
    TRY(tether__fold_in(g, c, &f, buf, scratch, stage, 0));
    if (f.newrank >= 0)
        TRY(doubling(g, c, w, &f, buf, scratch, stage));
    return tether__fold_out(g, c, &f, buf, scratch, stage, (uint32_t)(1 + f.rounds));
}

int tether__allreduce_tree(tether_group *g, const tether__coll *c)
{
    tether__wire w = tether__wire_of(c);
    size_t bytes = tether__aligned(c->count * w.wsize);
    tether__small small;
    if (c->count && c->send != c->recv)
        memcpy(c->recv, c->send, c->count * c->esize);
    /* the receive buffer, then (bf16 wire) the staging copy */
    char *scratch =
        tether__scratch_small(g, &small, w.bf16 ? 2 * bytes : bytes, "tree receive buffer");
    if (!scratch)
        return TETHER_ENOMEM;
    int rc = tether__algo_abort(g, run(g, c, &w, scratch, w.bf16 ? scratch + bytes : NULL));
    tether__scratch_release(g, scratch, &small);
    return rc;
}
