/* core/algo/neighbor_exchange.c - the neighbour exchange under the all-gather, all-reduce and
 * barrier of transports whose only direct links are a rank's two ring neighbours.
 *
 * Every rank has a block; every rank must end with every block, talking only to its neighbours
 * left = rank - 1 and right = rank + 1 (mod n). In step s = 1 .. n / 2 (ceil((n - 1) / 2)) a rank
 * passes to the right the block that came from the left in step s - 1 (its own in step 1) and to
 * the left the block that came from the right, so in step s it receives rank - s's block from the
 * left and rank + s's from the right. With n even the opposite rank's block would arrive from both
 * sides in the last step: it comes from the left only. Each block thus reaches the ranks up to
 * n / 2 away on either side in n / 2 steps, where recursive doubling, dissemination or a binomial
 * tree over such a ring send to ranks 2, 4, ... away and every such message is forwarded hop by
 * hop. A rank passes a block on only after its receive matched the call's signature, so every rank
 * hears, through ranks that checked, from every other: the exchange is also the agreement
 * (docs/architecture.md).
 *
 * Message steps: 2 (s - 1) going right, 2 (s - 1) + 1 going left: with two ranks both neighbours
 * are one rank, so the directions must differ. */
#include "core/algo/algo.h"

/* Empty blocks still need a valid address; nothing is ever written there. */
static char token;

/* Rank q's block and its length in *bytes. */
static char *block_of(const tether__nb_blocks *b, int q, size_t *bytes)
{
    *bytes = b->bytes;
    return *bytes ? b->base + (size_t)q * b->stride : &token;
}

/* Each step waits for its receives and for the previous step's sends, which have usually
 * completed by then, so a send's completion costs no wait of its own. */
static int exchange(tether_group *g, const tether__nb_blocks *b)
{
    int n = g->size, me = g->rank, steps = n / 2;
    int left = tether__mod(me - 1, n), right = (me + 1) % n;
    tether__req *reqs[4] = {NULL, NULL, NULL, NULL}; /* receives, then sends */
    for (int s = 1; s <= steps; s++) {
        int both_ways = n % 2 || s < steps;
        uint32_t step = 2 * (uint32_t)(s - 1);
        size_t len;
        char *at = block_of(b, tether__mod(me - s, n), &len);
        TRY(tether__irecv(g, left, at, len, step, &reqs[0]));
        if (both_ways) {
            at = block_of(b, (me + s) % n, &len);
            TRY(tether__irecv(g, right, at, len, step + 1, &reqs[1]));
        }
        TRY(tether__waitall(g, &reqs[2], 2)); /* the previous step's sends */
        at = block_of(b, tether__mod(me - s + 1, n), &len);
        TRY(tether__isend(g, right, at, len, step, &reqs[2]));
        if (both_ways) {
            at = block_of(b, (me + s - 1) % n, &len);
            TRY(tether__isend(g, left, at, len, step + 1, &reqs[3]));
        }
        TRY(tether__waitall(g, reqs, 2));
    }
    return tether__waitall(g, &reqs[2], 2);
}

int tether__neighbor_exchange(tether_group *g, const tether__nb_blocks *b)
{
    return tether__algo_abort(g, exchange(g, b));
}
