/* core/algo/barrier_neighbor.c - barrier where only ring neighbours are linked: the neighbour
 * exchange (neighbor_exchange.c) of empty blocks. A rank leaves once every rank's (empty) block has
 * reached it, each passed on only by ranks that had entered: ceil((n - 1) / 2) steps with one
 * message each way, where dissemination's ceil(log2 n) rounds send to ranks 2, 4, ... away, each
 * message forwarded hop by hop. */
#include "core/algo/algo.h"

int tether__barrier_neighbor(tether_group *g, const tether__coll *c)
{
    (void)c;
    tether__nb_blocks b = {0};
    return tether__neighbor_exchange(g, &b);
}
