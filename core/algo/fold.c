/* core/algo/fold.c - non-power-of-two folding for the tree and butterfly all-reduce.
 *
 * Recursive doubling and halving need a power of two of ranks. With n = pof2 + extra, the ranks
 * 0..2*extra-1 pair up before the algorithm: even rank r sends its whole vector to r + 1, which
 * reduces it into its own and takes part for both; the even rank waits. When the survivors are
 * done, the odd rank sends the result back. The cost is two extra full-vector messages on the
 * folded pairs, which is why these algorithms are for small and medium vectors. */
#include "core/algo/algo.h"

tether__fold tether__fold_of(const tether_group *g)
{
    tether__fold f = {.pof2 = 1};
    while (f.pof2 * 2 <= g->size) {
        f.pof2 *= 2;
        f.rounds++;
    }
    f.extra = g->size - f.pof2;
    if (g->rank < 2 * f.extra)
        f.newrank = g->rank % 2 ? g->rank / 2 : -1;
    else
        f.newrank = g->rank - f.extra;
    return f;
}

int tether__fold_rank(const tether__fold *f, int newrank)
{
    return newrank < f->extra ? 2 * newrank + 1 : newrank + f->extra;
}

int tether__fold_in(tether_group *g, const tether__coll *c, const tether__fold *f, char *buf,
                    char *scratch, char *stage, uint32_t step)
{
    if (g->rank >= 2 * f->extra) /* not folded: nothing to do, the case of every power of two */
        return TETHER_OK;
    tether__wire w = tether__wire_of(c);
    tether__req *r = NULL;
    if (f->newrank < 0) {
        TRY(tether__isend(g, g->rank + 1, tether__wire_pack(&w, buf, stage, c->count),
                          c->count * w.wsize, step, &r));
        return tether__waitall(g, &r, 1);
    }
    TRY(tether__irecv(g, g->rank - 1, scratch, c->count * w.wsize, step, &r));
    TRY(tether__waitall(g, &r, 1));
    return tether__wire_reduce(&w, buf, scratch, c->count);
}

int tether__fold_out(tether_group *g, const tether__coll *c, const tether__fold *f, char *buf,
                     char *scratch, char *stage, uint32_t step)
{
    if (g->rank >= 2 * f->extra) /* not folded: nothing to do, the case of every power of two */
        return TETHER_OK;
    tether__wire w = tether__wire_of(c);
    tether__req *r = NULL;
    if (f->newrank >= 0) {
        TRY(tether__isend(g, g->rank - 1, tether__wire_pack(&w, buf, stage, c->count),
                          c->count * w.wsize, step, &r));
        return tether__waitall(g, &r, 1);
    }
    TRY(tether__irecv(g, g->rank + 1, w.bf16 ? scratch : buf, c->count * w.wsize, step, &r));
    TRY(tether__waitall(g, &r, 1));
    if (w.bf16)
        tether__wire_unpack(&w, buf, scratch, c->count);
    return TETHER_OK;
}
