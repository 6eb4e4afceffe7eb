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

/* A peer that closed normally while a receive from it waits on one of its lanes: once every frame
 * it sent on its links in use is in and handled (none held back behind a frame passing through),
 * nothing more will come. A dead cable's count is left out: the frames it did not deliver went on
 * another (failover.c), whose count has them, and a lane's frames may come on any link. Only its
 * own messages count: after its bye a ring neighbour may still pass on others' messages while it
 * lingers. */
int tether__rdma_gone_check(rdma_ep *ep, rdma_link *l)
{
    rdma_peer *pe = &ep->peers[l->peer];
    int waits = 0;
    if (!pe->bye)
        return TETHER_OK;
    for (int k = 0; k < pe->nlinks; k++) {
        const rdma_link *lk = &pe->link[k];
        if (!lk->down && (lk->rx_seq != pe->bye_frames[k] || lk->nheld))
            return TETHER_OK;
        waits |= pe->posted[k].head || pe->arriving[k].cur;
    }
    if (!waits)
        return TETHER_OK;
    return tether__rdma_break(ep, TETHER_EPEER,
                              "rank %d closed its endpoint (its program freed the "
                              "group or is exiting) while rank %d still expects a message from it",
                              l->peer, ep->rank);
}
