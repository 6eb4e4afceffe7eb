/* backends/rdma/state.c - what every file of the backend reports through: the endpoint's first
 * failure, a peer gone while a receive waits for it, and the walk over every link. It calls no
 * other file of the backend. */
#include <stdarg.h>

#include "rdma_impl.h"

int tether__rdma_break(rdma_ep *ep, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tether__net_fail_first(&ep->err, ep->errmsg, "rdma", code, fmt, ap);
    va_end(ap);
    return ep->err;
}

rdma_link *tether__rdma_first_link(rdma_ep *ep)
{
    for (int p = 0; p < ep->size; p++)
        if (ep->peers[p].nlinks)
            return &ep->peers[p].link[0];
    return NULL;
}

rdma_link *tether__rdma_next_link(rdma_ep *ep, rdma_link *l)
{
    if (l->lane + 1 < ep->peers[l->peer].nlinks)
        return &ep->peers[l->peer].link[l->lane + 1];
    for (int p = l->peer + 1; p < ep->size; p++)
        if (ep->peers[p].nlinks)
            return &ep->peers[p].link[0];
    return NULL;
}

/* A peer that closed normally while a receive from it waits on link l: once every frame it sent
 * there is in and handled (none held back behind a frame passing through), nothing more will
 * come. Only its own messages count: after its bye a ring neighbour may still pass on others'
 * messages while it lingers. */
int tether__rdma_gone_check(rdma_ep *ep, rdma_link *l)
{
    rdma_peer *pe = &ep->peers[l->peer];
    int own_cur = pe->arriving[l->lane].cur != NULL;
    if (!pe->bye || l->rx_seq != pe->bye_frames[l->lane] || l->nheld ||
        (!pe->posted[l->lane].head && !own_cur))
        return TETHER_OK;
    return tether__rdma_break(ep, TETHER_EPEER,
                              "rank %d closed its endpoint (its program freed the "
                              "group or is exiting) while rank %d still expects a message from it",
                              l->peer, ep->rank);
}
