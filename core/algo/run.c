/* core/algo/run.c - run a checked collective on a group of size >= 2: dispatch the algorithm
 * tether__algo_choose picked to its file. */
#include "core/algo/run.h"
#include "core/algo/algo.h"
#include "core/algo/select.h"

typedef int (*algo_fn)(tether_group *g, const tether_coll *c);

/* Every (kind, algorithm) pair that exists; NULL elsewhere. The barrier's dissemination is filed
 * under TREE, the name its signatures have always carried. */
static const algo_fn algos[TETHER_COLL_KIND_COUNT][TETHER_ALGO_COUNT] = {
    [TETHER_COLL_ALL_REDUCE] =
        {
            [TETHER_ALGO_RING] = tether__allreduce_ring,
            [TETHER_ALGO_TREE] = tether__allreduce_tree,
            [TETHER_ALGO_BUTTERFLY] = tether__allreduce_butterfly,
            [TETHER_ALGO_DIRECT] = tether__allreduce_direct,
            [TETHER_ALGO_NEIGHBOR] = tether__allreduce_neighbor,
        },
    [TETHER_COLL_ALL_GATHER] =
        {
            [TETHER_ALGO_RING] = tether__allgather_ring,
            [TETHER_ALGO_DIRECT] = tether__allgather_direct,
            [TETHER_ALGO_NEIGHBOR] = tether__allgather_neighbor,
        },
    [TETHER_COLL_REDUCE_SCATTER] =
        {
            [TETHER_ALGO_RING] = tether__reducescatter_ring,
            [TETHER_ALGO_DIRECT] = tether__reducescatter_direct,
        },
    [TETHER_COLL_BROADCAST] =
        {
            [TETHER_ALGO_RING] = tether__broadcast_ring,
            [TETHER_ALGO_TREE] = tether__broadcast_tree,
            [TETHER_ALGO_NEIGHBOR] = tether__broadcast_neighbor,
        },
    [TETHER_COLL_ALL_TO_ALL] = {[TETHER_ALGO_DIRECT] = tether__alltoall_direct},
    [TETHER_COLL_BARRIER] =
        {
            [TETHER_ALGO_TREE] = tether__barrier_dissemination,
            [TETHER_ALGO_NEIGHBOR] = tether__barrier_neighbor,
        },
};

int tether__coll_run(tether_group *g, const tether_coll *c)
{
    int known = (int)c->kind >= 0 && c->kind < TETHER_COLL_KIND_COUNT && (int)c->algo > 0 &&
                c->algo < TETHER_ALGO_COUNT;
    algo_fn fn = known ? algos[c->kind][c->algo] : NULL;
    if (!fn)
        return tether__fail(TETHER_EINTERNAL, "%s: no algorithm %s for collective kind %d",
                            TETHER_RANK_TEXT(g, g->rank), tether__algo_name(c->algo), (int)c->kind);
    return fn(g, c);
}
