/* core/algo/broadcast_tree.c - broadcast: binomial tree for small buffers, pipelined chain for
 * large.
 *
 * Ranks are renumbered relative to the root (v = rank - root mod n). Binomial tree (c->algo TREE):
 * v receives from v with its lowest set bit cleared, then sends to v + 2^j for every 2^j below that
 * bit, largest subtree first: log2(n) latencies, the whole buffer per edge. Pipelined chain
 * (c->algo RING): v receives from v - 1 and forwards to v + 1 segment by segment, each segment
 * leaving as soon as it has arrived, so the time is about one buffer transfer plus n - 1 segment
 * hops, and every link carries the buffer once. Both are the same loop over segments: receive
 * segment k from the parent (all posted up front, straight into the buffer), then send it to
 * every child. Message step = segment number. A chain of two ranks has no hop to overlap, so it
 * sends one message: segments there only add frames and waits (N = 2, 1 MiB: 247 against 358 us,
 * docs/perf/analysis.md). */
#include <stdlib.h>

#include "core/algo/algo.h"

typedef struct tree_shape {
    int parent;       /* group rank, -1 at the root */
    int children[32]; /* group ranks, in send order */
    int nchildren;
} tree_shape;

static int real_rank(const tether_group *g, const tether_coll *c, int v)
{
    return (v + c->root) % g->size;
}

static tree_shape shape_of(const tether_group *g, const tether_coll *c)
{
    int n = g->size, v = tether__mod(g->rank - c->root, n);
    tree_shape t = {.parent = -1};
    if (c->algo != TETHER_ALGO_TREE) { /* chain */
        if (v > 0)
            t.parent = real_rank(g, c, v - 1);
        if (v + 1 < n)
            t.children[t.nchildren++] = real_rank(g, c, v + 1);
        return t;
    }
    int low = 1; /* lowest set bit of v; for the root, the first power of two >= n */
    while (low < n && !(v & low))
        low <<= 1;
    if (v > 0)
        t.parent = real_rank(g, c, v - low);
    for (int bit = low >> 1; bit > 0; bit >>= 1)
        if (v + bit < n)
            t.children[t.nchildren++] = real_rank(g, c, v + bit);
    return t;
}

/* Post segment k to every child. */
static int send_segment(tether_group *g, const tether_coll *c, const tree_shape *t, size_t nseg,
                        size_t k, tether_req **sends)
{
    size_t off, len, es = c->esize;
    tether__part(c->count, nseg, k, &off, &len);
    for (int i = 0; i < t->nchildren; i++)
        TRY(tether__isend(g, t->children[i], tether__at(c->recv, off * es), len * es, (uint32_t)k,
                          &sends[(size_t)i * nseg + k]));
    return TETHER_OK;
}

/* The data flows from the root only, so no rank would hear of another that passed another root,
 * count or dtype (the root would return TETHER_OK with its peers' messages left unmatched): the
 * ranks agree on the signature too (tether__disseminate), and no rank returns before it is agreed.
 * Its first round goes out with the data; forwarders pass on each segment as it comes, since it
 * matched their parent's signature; the other rounds follow. */
static int run(tether_group *g, const tether_coll *c, const tree_shape *t, size_t nseg,
               tether_req **recvs, tether_req **sends)
{
    size_t es = c->esize;
    tether_req *agree[2] = {NULL, NULL};
    for (size_t k = 0; k < nseg && t->parent >= 0; k++) {
        size_t off, len;
        tether__part(c->count, nseg, k, &off, &len);
        TRY(tether__irecv(g, t->parent, tether__at(c->recv, off * es), len * es, (uint32_t)k,
                          &recvs[k]));
    }
    for (size_t k = 0; k < nseg && t->parent < 0; k++)
        TRY(send_segment(g, c, t, nseg, k, sends));
    TRY(tether__disseminate_start(g, TETHER_AGREE_STEP, agree));
    for (size_t k = 0; k < nseg && t->parent >= 0; k++) {
        TRY(tether__waitall(g, &recvs[k], 1));
        TRY(send_segment(g, c, t, nseg, k, sends));
    }
    TRY(tether__disseminate_finish(g, TETHER_AGREE_STEP, agree));
    return tether__waitall(g, sends, t->nchildren * (int)nseg);
}

int tether__broadcast_tree(tether_group *g, const tether_coll *c)
{
    tree_shape t = shape_of(g, c);
    int pipelined = c->algo != TETHER_ALGO_TREE && g->size > 2;
    size_t nseg = pipelined ? tether__nsegments(c->count, c->esize, TETHER_SEG_BYTES) : 1;
    tether_req **recvs = calloc(nseg, sizeof *recvs);
    tether_req **sends = calloc(nseg * (size_t)(t.nchildren ? t.nchildren : 1), sizeof *sends);
    int rc;
    if (!recvs || !sends)
        rc = tether__fail(TETHER_ENOMEM, "rank %d: out of memory for %zu segments of broadcast",
                          g->rank, nseg);
    else
        rc = tether__algo_abort(g, run(g, c, &t, nseg, recvs, sends));
    free(recvs);
    free(sends);
    return rc;
}
