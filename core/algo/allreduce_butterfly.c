/* core/algo/allreduce_butterfly.c - recursive halving-doubling all-reduce (Rabenseifner).
 *
 * Reduce-scatter by recursive halving: in round k a rank and its partner (number differing in bit
 * k) split the range they share in two; the one with bit k clear keeps the lower half, sends the
 * upper half and reduces the partner's lower half into its own, the other does the opposite. After
 * log2(n) rounds each rank owns 1/n of the vector, fully reduced. All-gather by recursive doubling
 * undoes the splits in reverse order, each partner sending the part it owns. Every rank moves
 * 2 (n - 1) / n of the vector (like the ring) in 2 log2(n) steps (like a tree): good for medium
 * vectors. Non-power-of-two sizes fold the extra ranks in first and out at the end
 * (core/algo/fold.c), which is correct for any n. Ranges may be empty (count < n): the messages are
 * then empty but still exchanged. With bf16 on the wire each owner rounds its final part first.
 * Steps: fold 0, halving 1..L, doubling L+1..2L, unfold 2L+1 (L = log2(pof2)).
 *
 * A survivor's place in the butterfly is the Gray code of its number (0, 1, 3, 2 for four), and
 * partners are the places differing in bit k. Any numbering gives the same sums; this one makes
 * every partner of four ranks a ring neighbour (0-1 and 2-3, then 0-3 and 1-2), so where a
 * transport links only neighbours (the ring backend, RDMA's ring mode) no message is forwarded. */
#include <stdlib.h>
#include <string.h>

#include "core/algo/algo.h"
#include "core/reduce.h"

typedef struct range {
    size_t lo, hi;
} range;

static int gray(int n)
{
    return n ^ (n >> 1);
}

/* The group rank at place `place` of the butterfly. */
static int rank_at(const tether__fold *f, int place)
{
    int n = 0;
    for (; place; place >>= 1)
        n ^= place; /* the inverse of gray() */
    return tether__fold_rank(f, n);
}

static int halving(tether_group *g, const tether__coll *c, const tether__fold *f, char *buf,
                   char *scratch, char *stage, range *kept, range *history)
{
    tether__wire w = tether__wire_of(c);
    size_t es = w.esize, ws = w.wsize;
    range cur = {0, c->count};
    for (int k = 0; k < f->rounds; k++) {
        int bit = 1 << k, place = gray(f->newrank), partner = rank_at(f, place ^ bit);
        size_t mid = cur.lo + (cur.hi - cur.lo) / 2;
        range keep = (place & bit) ? (range){mid, cur.hi} : (range){cur.lo, mid};
        range give = (place & bit) ? (range){cur.lo, mid} : (range){mid, cur.hi};
        const void *out = tether__wire_pack(&w, tether__at(buf, give.lo * es),
                                            tether__at(stage, give.lo * ws), give.hi - give.lo);
        TRY(tether__sendrecv(g, partner, out, (give.hi - give.lo) * ws, partner, scratch,
                             (keep.hi - keep.lo) * ws, (uint32_t)(1 + k)));
        TRY(tether__wire_reduce(&w, tether__at(buf, keep.lo * es), scratch, keep.hi - keep.lo));
        history[k] = cur;
        cur = keep;
    }
    *kept = cur;
    return TETHER_OK;
}

static int doubling(tether_group *g, const tether__coll *c, const tether__fold *f, char *buf,
                    char *stage, range cur, const range *history)
{
    tether__wire w = tether__wire_of(c);
    size_t es = w.esize, ws = w.wsize;
    if (w.bf16)
        tether__round_to_bf16((float *)tether__at(buf, cur.lo * es), cur.hi - cur.lo);
    for (int k = f->rounds - 1; k >= 0; k--) {
        int partner = rank_at(f, gray(f->newrank) ^ (1 << k));
        range whole = history[k];
        range other = cur.lo == whole.lo ? (range){cur.hi, whole.hi} : (range){whole.lo, cur.lo};
        const void *out = tether__wire_pack(&w, tether__at(buf, cur.lo * es),
                                            tether__at(stage, cur.lo * ws), cur.hi - cur.lo);
        char *into = w.bf16 ? tether__at(stage, other.lo * ws) : tether__at(buf, other.lo * es);
        TRY(tether__sendrecv(g, partner, out, (cur.hi - cur.lo) * ws, partner, into,
                             (other.hi - other.lo) * ws, (uint32_t)(2 * f->rounds - k)));
        if (w.bf16)
            tether__wire_unpack(&w, tether__at(buf, other.lo * es), into, other.hi - other.lo);
        cur = whole;
    }
    return TETHER_OK;
}

static int run(tether_group *g, const tether__coll *c, tether__fold f, char *scratch, char *stage)
{
    range history[32], kept;
    char *buf = c->recv;
    TRY(tether__fold_in(g, c, &f, buf, scratch, stage, 0));
    if (f.newrank >= 0) {
        TRY(halving(g, c, &f, buf, scratch, stage, &kept, history));
        TRY(doubling(g, c, &f, buf, stage, kept, history));
    }
    return tether__fold_out(g, c, &f, buf, scratch, stage, (uint32_t)(1 + 2 * f.rounds));
}

int tether__allreduce_butterfly(tether_group *g, const tether__coll *c)
{
    tether__wire w = tether__wire_of(c);
    if (c->count && c->send != c->recv)
        memcpy(c->recv, c->send, c->count * c->esize);
    /* what one message brings in: at most the first halving's half, but a whole vector where
     * ranks fold in (or out, with bf16 on the wire) */
    tether__fold f = tether__fold_of(g);
    size_t most = f.extra ? c->count : c->count - c->count / 2;
    char *scratch = tether__scratch(g, most * w.wsize, "butterfly receive buffer");
    char *stage = w.bf16 ? tether__scratch(g, c->count * w.wsize, "bf16 staging") : NULL;
    int rc = TETHER_ENOMEM;
    if (scratch && (stage || !w.bf16))
        rc = tether__algo_abort(g, run(g, c, f, scratch, stage));
    tether__scratch_free(g, scratch);
    tether__scratch_free(g, stage);
    return rc;
}
