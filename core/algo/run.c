/* core/algo/run.c - run a checked collective on a group of size >= 2: dispatch the algorithm
 * tether__algo_choose picked to its file. */
#include "core/algo/algo.h"

typedef int (*algo_fn)(tether_group *g, const tether_coll *c);

/* The algorithm of kind x algo; NULL where that pair does not exist. */
static algo_fn lookup(tether_coll_kind kind, tether_algo algo)
{
    static const algo_fn allreduce[TETHER_ALGO_COUNT] = {
        [TETHER_ALGO_RING] = tether__allreduce_ring,
        [TETHER_ALGO_TREE] = tether__allreduce_tree,
        [TETHER_ALGO_BUTTERFLY] = tether__allreduce_butterfly,
        [TETHER_ALGO_DIRECT] = tether__allreduce_direct,
    };
    switch (kind) {
    case TETHER_COLL_ALL_REDUCE:
        return allreduce[algo];
    case TETHER_COLL_ALL_GATHER:
        return algo == TETHER_ALGO_DIRECT ? tether__allgather_direct : tether__allgather_ring;
    case TETHER_COLL_REDUCE_SCATTER:
        return algo == TETHER_ALGO_DIRECT ? tether__reducescatter_direct
                                          : tether__reducescatter_ring;
    case TETHER_COLL_BROADCAST:
        return algo == TETHER_ALGO_TREE ? tether__broadcast_tree : tether__broadcast_ring;
    case TETHER_COLL_ALL_TO_ALL:
        return tether__alltoall_direct;
    case TETHER_COLL_BARRIER:
        return tether__barrier_dissemination;
    case TETHER_COLL_SEND_RECV:
    case TETHER_COLL_KIND_COUNT:
        break;
    }
    return NULL;
}

int tether__coll_run(tether_group *g, const tether_coll *c)
{
    algo_fn fn =
        ((int)c->algo > 0 && c->algo < TETHER_ALGO_COUNT) ? lookup(c->kind, c->algo) : NULL;
    if (!fn)
        return tether__fail(TETHER_EINTERNAL, "rank %d: no algorithm %s for collective kind %d",
                            g->rank, tether__algo_name(c->algo), (int)c->kind);
    return fn(g, c);
}
