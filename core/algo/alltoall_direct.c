/* core/algo/alltoall_direct.c - all-to-all by pairwise exchange: block j of send goes to rank j.
 *
 * Every receive is posted first, straight into its place in recv. Sends then go out in pairwise
 * order: at position s (1..n-1) rank r sends to r + s, so at each position every rank has exactly
 * one sender aimed at it and no receiver is flooded while others idle; the own block is a local
 * copy. One message step, each pair exchanging one message each way. send and recv do not overlap
 * (checked by the caller). */
#include <stdlib.h>
#include <string.h>

#include "core/algo/algo.h"

static int exchange(tether_group *g, const tether__coll *c, tether__req **reqs)
{
    int n = g->size, me = g->rank;
    size_t block = c->count * c->esize;
    for (int s = 1; s < n; s++) {
        int q = (me - s + n) % n;
        TRY(tether__irecv(g, q, tether__at(c->recv, (size_t)q * block), block, 0, &reqs[q]));
    }
    for (int s = 1; s < n; s++) {
        int q = (me + s) % n;
        TRY(tether__isend(g, q, tether__at(c->send, (size_t)q * block), block, 0, &reqs[n + q]));
    }
    if (block)
        memcpy((char *)c->recv + (size_t)me * block, (const char *)c->send + (size_t)me * block,
               block);
    return tether__waitall(g, reqs, 2 * n);
}

int tether__alltoall_direct(tether_group *g, const tether__coll *c)
{
    tether__req **reqs = calloc(2 * (size_t)g->size, sizeof *reqs);
    if (!reqs)
        return tether__fail(TETHER_ENOMEM, "%s: out of memory for %d request slots in all_to_all",
                            TETHER__RANK_TEXT(g, g->rank), 2 * g->size);
    int rc = tether__algo_abort(g, exchange(g, c, reqs));
    free(reqs);
    return rc;
}
