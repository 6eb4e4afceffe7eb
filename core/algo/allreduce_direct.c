/* core/algo/allreduce_direct.c - all-reduce over a full mesh: direct reduce-scatter, direct all-gather.
 *
 * Rank b owns block b of the vector. First every rank sends block q to rank q, all peers at once,
 * and reduces the n - 1 blocks it receives into its own (core/algo/reducescatter_direct.c); then it
 * sends its finished block to every peer and receives theirs in place (core/algo/allgather_direct.c).
 * The volume of the ring (2 (n - 1) / n of the vector in and out per rank) in two steps instead of
 * 2 (n - 1): the choice on full meshes of a few ranks, where every pair has its own link.
 * Reduce-scatter messages use steps 1.., the all-gather step 0. With bf16 on the wire the whole
 * vector has one bfloat16 staging copy; the owner rounds its block before the all-gather. */
#include <stdlib.h>

#include "core/algo/algo.h"

int tether__allreduce_direct(tether_group *g, const tether_coll *c)
{
    int n = g->size;
    tether_span *blocks = tether__scratch(g, sizeof *blocks * (size_t)n, "block table");
    char *stage = c->wire_bf16 ? tether__scratch(g, c->count * sizeof(uint16_t), "bf16 staging") : NULL;
    int rc = TETHER_ENOMEM;
    if (blocks && (stage || !c->wire_bf16)) {
        for (int b = 0; b < n; b++) {
            size_t off, len;
            tether__part(c->count, (size_t)n, (size_t)b, &off, &len);
            blocks[b] = (tether_span){.src = tether__at(c->send, off * c->esize),
                                      .dst = tether__at(c->recv, off * c->esize), .len = len, .off = off};
        }
        rc = tether__rs_direct(g, c, blocks, stage, c->wire_bf16, 1);
        if (rc == TETHER_OK)
            rc = tether__ag_direct(g, c, blocks[g->rank].dst, blocks, stage, 0);
    }
    free(blocks);
    free(stage);
    return rc;
}
