/* backends/net/hop.c - ring routing (the rule: hop.h). */
#include "hop.h"

int tether__net_next_hop(int rank, int size, int dst)
{
    int cw = (dst - rank + size) % size, ccw = (rank - dst + size) % size;
    if (cw == 1 || ccw == 1)
        return dst;
    return cw < ccw || (cw == ccw && rank < dst) ? (rank + 1) % size : (rank + size - 1) % size;
}
