/* core/algo/run.c - run a checked collective on a group of size >= 2: dispatch the algorithm
 * tether__algo_choose picked to its file. */
#include "core/algo/run.h"
#include "core/algo/algo.h"
#include "core/algo/select.h"

typedef int (*algo_fn)(tether_group *g, const tether__coll *c);

/* Every (kind, algorithm) pair that exists; NULL elsewhere. The barrier's dissemination is filed
 * under TREE, the name its signatures have always carried. */
static const algo_fn algos[TETHER__COLL_KIND_COUNT][TETHER__ALGO_COUNT] = {
    [TETHER__COLL_ALL_REDUCE] =
        {
            [TETHER__ALGO_RING] = tether__allreduce_ring,
            [TETHER__ALGO_TREE] = tether__allreduce_tree,
            [TETHER__ALGO_BUTTERFLY] = tether__allreduce_butterfly,
            [TETHER__ALGO_DIRECT] = tether__allreduce_direct,
            [TETHER__ALGO_NEIGHBOR] = tether__allreduce_neighbor,
        },
    [TETHER__COLL_ALL_GATHER] =
        {
            [TETHER__ALGO_RING] = tether__allgather_ring,
            [TETHER__ALGO_TREE] = tether__allgather_doubling,
            [TETHER__ALGO_DIRECT] = tether__allgather_direct,
            [TETHER__ALGO_NEIGHBOR] = tether__allgather_neighbor,
        },
    [TETHER__COLL_REDUCE_SCATTER] =
        {
            [TETHER__ALGO_RING] = tether__reducescatter_ring,
            [TETHER__ALGO_DIRECT] = tether__reducescatter_direct,
        },
    [TETHER__COLL_BROADCAST] =
        {
            [TETHER__ALGO_RING] = tether__broadcast_ring,
            [TETHER__ALGO_TREE] = tether__broadcast_tree,
            [TETHER__ALGO_NEIGHBOR] = tether__broadcast_neighbor,
        },
    [TETHER__COLL_ALL_TO_ALL] = {[TETHER__ALGO_DIRECT] = tether__alltoall_direct},
    [TETHER__COLL_BARRIER] =
        {
            [TETHER__ALGO_TREE] = tether__barrier_dissemination,
            [TETHER__ALGO_NEIGHBOR] = tether__barrier_neighbor,
        },
};

int tether__coll_run(tether_group *g, const tether__coll *c)
{
    int known = (int)c->kind >= 0 && c->kind < TETHER__COLL_KIND_COUNT && (int)c->algo > 0 &&
                c->algo < TETHER__ALGO_COUNT;
    algo_fn fn = known ? algos[c->kind][c->algo] : NULL;
    if (!fn)
        return tether__fail(TETHER_EINTERNAL, "%s: no algorithm %s for collective kind %d",
                            TETHER__RANK_TEXT(g, g->rank), tether__algo_name(c->algo),
                            (int)c->kind);
    return fn(g, c);
}
