/* core/algo/barrier_dissemination.c - barrier by dissemination: ceil(log2 n) rounds of empty
 * messages.
 *
 * In round k rank r sends to r + 2^k and receives from r - 2^k (mod n). After round k every rank
 * has heard, directly or through others, from the 2^(k+1) ranks before it, so after ceil(log2 n)
 * rounds from everyone: no rank leaves before all have entered. Works for any n, no root, one
 * message each way per round. Message step = round. */
#include "core/algo/algo.h"

int tether__barrier_dissemination(tether_group *g, const tether_coll *c)
{
    (void)c;
    int n = g->size;
    char token = 0; /* empty messages still need a valid address */
    uint32_t round = 0;
    for (int dist = 1; dist < n; dist <<= 1, round++)
        TRY(tether__sendrecv(g, (g->rank + dist) % n, &token, 0, tether__mod(g->rank - dist, n),
                             &token, 0, round));
    return TETHER_OK;
}
