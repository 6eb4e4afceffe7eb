/* core/algo/barrier_dissemination.c - barrier by dissemination: ceil(log2 n) rounds of empty
 * messages, which is also how a collective whose data flows one way agrees on its signature.
 *
 * In round k rank r sends to r + 2^k and receives from r - 2^k (mod n). After round k every rank
 * has heard, directly or through others, from the 2^(k+1) ranks before it, so after ceil(log2 n)
 * rounds from everyone: no rank leaves before all have entered. Works for any n, no root, one
 * message each way per round. Message step = step0 + round.
 *
 * Agreement: every message carries the call's signature and a receive completes only when the
 * sender's signature equals the receiver's (else TETHER_EMISMATCH), and a rank sends in round k
 * only after its receive of round k - 1 matched. So a rank that finishes has a chain of matched
 * signatures back to every rank's first send: every rank called the same collective with the same
 * count, dtype, op and root. A rank that disagrees breaks the world, and every rank hears it within
 * the same call (a receive it waits for meets the other signature, or the abort). */
#include "core/algo/algo.h"

/* Empty messages still need a valid address; nothing is ever written there. */
static char token;

int tether__disseminate_start(tether_group *g, uint32_t step0, tether_req *round0[2])
{
    int n = g->size;
    TRY(tether__irecv(g, tether__mod(g->rank - 1, n), &token, 0, step0, &round0[0]));
    return tether__isend(g, (g->rank + 1) % n, &token, 0, step0, &round0[1]);
}

int tether__disseminate_finish(tether_group *g, uint32_t step0, tether_req *round0[2])
{
    int n = g->size;
    uint32_t round = 1;
    TRY(tether__waitall(g, round0, 2));
    for (int dist = 2; dist < n; dist <<= 1, round++)
        TRY(tether__sendrecv(g, (g->rank + dist) % n, &token, 0, tether__mod(g->rank - dist, n),
                             &token, 0, step0 + round));
    return TETHER_OK;
}

int tether__disseminate(tether_group *g, uint32_t step0)
{
    tether_req *round0[2] = {NULL, NULL};
    TRY(tether__disseminate_start(g, step0, round0));
    return tether__disseminate_finish(g, step0, round0);
}

int tether__barrier_dissemination(tether_group *g, const tether_coll *c)
{
    (void)c;
    return tether__disseminate(g, 0);
}
