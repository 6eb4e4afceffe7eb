/* core/algo/barrier_dissemination.c - barrier by dissemination: ceil(log2 n) rounds of empty
 * messages.
 *
 * In round k rank r sends to r + 2^k and receives from r - 2^k (mod n). After round k every rank
 * has heard, directly or through others, from the 2^(k+1) ranks before it, so after ceil(log2 n)
 * rounds from everyone: no rank leaves before all have entered. Works for any n, no root, one
 * message each way per round. Message step = round.
 *
 * Agreement: every message carries the call's signature and a receive completes only when the
 * sender's signature equals the receiver's (else TETHER_EMISMATCH), and a rank sends in round k
 * only after its receive of round k - 1 matched. So a rank that finishes has a chain of matched
 * signatures back to every rank's first send: every rank called the same collective, and the same
 * earlier ones (the signature chain, core/coll.c). */
#include "core/algo/algo.h"

/* Empty messages still need a valid address; nothing is ever written there. */
static char token;

int tether__barrier_dissemination(tether_group *g, const tether__coll *c)
{
    (void)c;
    int n = g->size;
    uint32_t round = 0;
    for (int dist = 1; dist < n; dist <<= 1, round++)
        TRY(tether__sendrecv(g, (g->rank + dist) % n, &token, 0, tether__mod(g->rank - dist, n),
                             &token, 0, round));
    return TETHER_OK;
}
