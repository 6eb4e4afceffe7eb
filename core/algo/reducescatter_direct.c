/* core/algo/reducescatter_direct.c - reduce-scatter over a full mesh: everyone sends to everyone at
 * once.
 *
 * Rank q's block of every rank's input goes straight to rank q, which reduces the n - 1 blocks it
 * receives into its own. One step of latency and (n - 1) blocks in and out per rank, the same
 * volume as the ring; it wants a direct link to every peer (TETHER__CAP_DIRECT). Blocks are cut
 * into segments; receives for TETHER__WINDOW segments of every peer are in flight while the segment
 * before them is reduced, in a fixed peer order so the result does not depend on arrival order.
 * tether__rs_direct is also the first half of the direct all-reduce. */
#include <stdlib.h>
#include <string.h>

#include "core/algo/algo.h"
#include "core/reduce.h"

typedef struct rs_ctx {
    tether_group *g;
    const tether__span *blocks;
    tether__wire w;
    char *stage, *scratch;
    size_t nseg, seg_max, window;
    uint32_t step0;
    tether__req **recvs; /* window x n (own column unused) */
    tether__req **sends; /* n x nseg */
} rs_ctx;

static char *slot(const rs_ctx *x, size_t k, int q)
{
    return x->scratch +
           ((k % x->window) * (size_t)x->g->size + (size_t)q) * x->seg_max * x->w.wsize;
}

/* Receive segment k of my block from every peer. */
static int post_recvs(rs_ctx *x, size_t k)
{
    int n = x->g->size, me = x->g->rank;
    size_t off, len;
    tether__part(x->blocks[me].len, x->nseg, k, &off, &len);
    for (int s = 1; s < n; s++) {
        int q = (me - s + n) % n;
        TRY(tether__irecv(x->g, q, slot(x, k, q), len * x->w.wsize, x->step0 + (uint32_t)k,
                          &x->recvs[(k % x->window) * (size_t)n + (size_t)q]));
    }
    return TETHER_OK;
}

/* Every segment of block q to rank q, peers in the order me + 1, me + 2, ... so that no rank is
 * everyone's first target. */
static int post_sends(rs_ctx *x)
{
    int n = x->g->size, me = x->g->rank;
    for (int s = 1; s < n; s++) {
        int q = (me + s) % n;
        const tether__span *b = &x->blocks[q];
        for (size_t k = 0; k < x->nseg; k++) {
            size_t off, len;
            tether__part(b->len, x->nseg, k, &off, &len);
            const void *bytes =
                tether__wire_pack(&x->w, tether__at(b->src, off * x->w.esize),
                                  tether__at(x->stage, (b->off + off) * x->w.wsize), len);
            TRY(tether__isend(x->g, q, bytes, len * x->w.wsize, x->step0 + (uint32_t)k,
                              &x->sends[(size_t)q * x->nseg + k]));
        }
    }
    return TETHER_OK;
}

/* Segment k has arrived from every peer: own input first, then the peers in rank order. */
static int reduce_segment(rs_ctx *x, size_t k, int round_final)
{
    int n = x->g->size, me = x->g->rank;
    const tether__span *mine = &x->blocks[me];
    size_t off, len, es = x->w.esize;
    tether__part(mine->len, x->nseg, k, &off, &len);
    char *dst = tether__at(mine->dst, off * es);
    const char *acc = mine->src + off * es; /* the first peer's reduction reads the input */
    for (int q = 0; q < n; q++)
        if (q != me) {
            TRY(tether__wire_reduce_from(&x->w, dst, acc, slot(x, k, q), len));
            acc = dst;
        }
    if (round_final)
        tether__round_to_bf16((float *)dst, len);
    return TETHER_OK;
}

static int exchange(rs_ctx *x, int round_final)
{
    int n = x->g->size;
    for (size_t k = 0; k < x->window; k++)
        TRY(post_recvs(x, k));
    TRY(post_sends(x));
    for (size_t k = 0; k < x->nseg; k++) {
        TRY(tether__waitall(x->g, &x->recvs[(k % x->window) * (size_t)n], n));
        TRY(reduce_segment(x, k, round_final));
        if (k + x->window < x->nseg)
            TRY(post_recvs(x, k + x->window));
    }
    return tether__waitall(x->g, x->sends, n * (int)x->nseg);
}

int tether__rs_direct(tether_group *g, const tether__coll *c, const tether__span *blocks,
                      char *stage, int round_final, uint32_t step0)
{
    int n = g->size;
    rs_ctx x = {.g = g, .blocks = blocks, .w = tether__wire_of(c), .stage = stage, .step0 = step0};
    size_t len_max = 0;
    for (int b = 0; b < n; b++)
        len_max = blocks[b].len > len_max ? blocks[b].len : len_max;
    x.nseg = tether__nsegments(len_max, x.w.wsize, TETHER__DIRECT_SEG_BYTES);
    x.seg_max = (len_max + x.nseg - 1) / x.nseg;
    x.window = x.nseg < TETHER__WINDOW ? x.nseg : TETHER__WINDOW;
    x.scratch =
        tether__scratch(g, x.window * (size_t)n * x.seg_max * x.w.wsize, "reduce-scatter slots");
    x.recvs = calloc(x.window * (size_t)n, sizeof *x.recvs);
    x.sends = calloc((size_t)n * x.nseg, sizeof *x.sends);
    int rc = TETHER_ENOMEM;
    if (!x.recvs || !x.sends)
        tether__fail(TETHER_ENOMEM, "%s: out of memory for %zu request slots in %s",
                     TETHER__RANK_TEXT(g, g->rank), (size_t)n * (x.nseg + x.window), g->cur_name);
    else if (x.scratch)
        rc = tether__algo_abort(g, exchange(&x, round_final));
    tether__scratch_free(g, x.scratch);
    free(x.recvs);
    free(x.sends);
    return rc;
}

int tether__reducescatter_direct(tether_group *g, const tether__coll *c)
{
    int n = g->size;
    tether__small small; /* the table on the stack, as the direct all-gather's */
    tether__span *blocks =
        tether__scratch_small(g, &small, sizeof *blocks * (size_t)n, "block table");
    if (!blocks)
        return TETHER_ENOMEM;
    for (int b = 0; b < n; b++) {
        size_t off = (size_t)b * c->count;
        blocks[b] = (tether__span){.src = tether__at(c->send, off * c->esize),
                                   .dst = b == g->rank ? c->recv : NULL,
                                   .len = c->count,
                                   .off = off};
    }
    int rc = tether__rs_direct(g, c, blocks, NULL, 0, 0);
    tether__scratch_release(g, blocks, &small);
    return rc;
}
