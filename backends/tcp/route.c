/* backends/tcp/route.c - the rules of routed messages and leave notices (route.h). */
#include "route.h"

#include "backends/net/frame.h"

int tether__route_hop(const tether__routes *rt, int peer)
{
    return rt->nlinks[peer] > 0 ? peer : rt->via[peer];
}

tether__route_place tether__route_arrived(const tether__routes *rt, int32_t code, int index)
{
    int src = tether__route_src(code), dst = tether__route_dst(code);
    if (!rt->via || src >= rt->size || dst >= rt->size || src == rt->rank || index != 0)
        return TETHER__ROUTE_MISPLACED;
    if (dst != rt->rank)
        return TETHER__ROUTE_PASS;
    return rt->nlinks[src] > 0 ? TETHER__ROUTE_LINKED : TETHER__ROUTE_HERE;
}

int tether__route_onward(const tether__routes *rt, int from, int dst)
{
    int next = tether__route_hop(rt, dst);
    return next == from ? -1 : next;
}

int tether__route_left(tether__routes *rt, int origin)
{
    if (origin < 0 || origin >= rt->size || origin == rt->rank || !rt->via)
        return -1;
    rt->leaves_seen++;
    return 0;
}

int tether__route_leave_next(const tether__routes *rt, int from, int origin, int after)
{
    for (int p = after + 1; p < rt->size; p++)
        if (rt->nlinks[p] > 0 && p != from && p != origin)
            return p;
    return -1;
}

int tether__route_all_left(const tether__routes *rt)
{
    int neighbours = 0;
    for (int p = 0; p < rt->size; p++)
        neighbours += rt->nlinks[p] > 0;
    return rt->leaves_seen >= neighbours * (rt->size - 1);
}
