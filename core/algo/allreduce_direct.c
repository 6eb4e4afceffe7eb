/* core/algo/allreduce_direct.c - all-reduce over a full mesh: direct reduce-scatter, direct
 * all-gather, or, for small vectors, one step.
 *
 * Rank b owns block b of the vector. First every rank sends block q to rank q, all peers at once,
 * and reduces the n - 1 blocks it receives into its own (core/algo/reducescatter_direct.c); then it
 * sends its finished block to every peer and receives theirs in place
 * (core/algo/allgather_direct.c). The volume of the ring (2 (n - 1) / n of the vector in and out
 * per rank) in two steps instead of 2 (n - 1): the choice on full meshes of a few ranks, where
 * every pair has its own link. Reduce-scatter messages use steps 1.., the all-gather step 0. With
 * bf16 on the wire the whole vector has one bfloat16 staging copy; the owner rounds its block
 * before the all-gather.
 *
 * One step (vectors of at most ONE_STEP_MAX bytes, up to TETHER__DIRECT_MAX_RANKS ranks): every
 * rank sends its whole vector to every peer and reduces all n vectors in rank order, so every rank
 * computes the same bits. One latency instead of two, for n - 1 vectors out per rank instead of
 * 2 (n - 1) / n: the better deal while a message costs its latency, not its bytes. Message step 0;
 * with bf16 on the wire every rank sends and reduces the bfloat16 values, then rounds the result.
 */
#include <stdlib.h>
#include <string.h>

#include "core/algo/algo.h"
#include "core/batch.h"

/* Vectors up to this many bytes take the one-step path: (n - 1) (n - 2) / n vectors more per rank
 * than two steps, for one latency less (measured: docs/perf/notes.md,
 * core/algo/allreduce_direct.c). */
#define ONE_STEP_MAX ((size_t)4 * 1024)

/* The n wire vectors side by side in scratch (slot `me` holds this rank's own), each slot_bytes. */
static int one_step(tether_group *g, const tether__coll *c, char *scratch, size_t slot_bytes)
{
    int n = g->size, me = g->rank;
    tether__wire w = tether__wire_of(c);
    size_t bytes = c->count * w.wsize;
    char *mine = scratch + (size_t)me * slot_bytes;
    tether__req *reqs[2 * TETHER__DIRECT_MAX_RANKS] = {NULL};
    /* a copy of the input even in place: recv is overwritten (rank 0's vector first) before the
     * own vector's turn to be reduced */
    const void *out = tether__wire_pack(&w, c->send, mine, c->count);
    if (out != mine && bytes)
        memcpy(mine, out, bytes);
    /* the sends first, all messages in one post (core/batch.h): the receives' requests are then
     * made while the vectors travel */
    tether__batch b;
    tether__batch_init(&b, g);
    for (int s = 1; s < n; s++) {
        int q = (me + s) % n;
        TRY(tether__batch_send(&b, q, mine, bytes, 0, &reqs[n + q]));
    }
    for (int s = 1; s < n; s++) {
        int q = (me - s + n) % n;
        TRY(tether__batch_recv(&b, q, scratch + (size_t)q * slot_bytes, bytes, 0, &reqs[q]));
    }
    TRY(tether__batch_post(&b));
    TRY(tether__waitall(g, reqs, 2 * n));
    return tether__wire_reduce_slots(&w, c->recv, scratch, slot_bytes, n, c->count);
}

int tether__allreduce_direct(tether_group *g, const tether__coll *c)
{
    int n = g->size;
    if (c->count * c->esize <= ONE_STEP_MAX && n <= TETHER__DIRECT_MAX_RANKS)
        return tether__with_rank_slots(g, c, "one-step vectors", one_step);
    tether__span *blocks = tether__scratch(g, sizeof *blocks * (size_t)n, "block table");
    char *stage =
        c->wire_bf16 ? tether__scratch(g, c->count * sizeof(uint16_t), "bf16 staging") : NULL;
    int rc = TETHER_ENOMEM;
    if (blocks && (stage || !c->wire_bf16)) {
        for (int b = 0; b < n; b++) {
            size_t off, len;
            tether__part(c->count, (size_t)n, (size_t)b, &off, &len);
            blocks[b] = (tether__span){.src = tether__at(c->send, off * c->esize),
                                       .dst = tether__at(c->recv, off * c->esize),
                                       .len = len,
                                       .off = off};
        }
        rc = tether__rs_direct(g, c, blocks, stage, c->wire_bf16, 1);
        if (rc == TETHER_OK)
            rc = tether__ag_direct(g, c, blocks[g->rank].dst, blocks, stage, 0);
    }
    tether__scratch_free(g, blocks);
    tether__scratch_free(g, stage);
    return rc;
}
