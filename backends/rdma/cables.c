/* backends/rdma/cables.c - which cable carries a link's frames now: its own while it lives, else
 * the first live one to the same peer (failover.c), which takes turns between its own frames and
 * its dead siblings'; and the fence that keeps a lane's frames in order when it moves (io.c).
 * Questions about the state only: this file calls nothing of the backend, so the data path, the
 * resends, failover and rejoin all ask it without a call cycle. */
#include "cables.h"
#include "rdma_impl.h"

int tether__rdma_keeps(const rdma_ep *ep, const rdma_link *l)
{
    return ep->uc || ep->peers[l->peer].nlinks > 1;
}

rdma_link *tether__rdma_carrier(rdma_ep *ep, rdma_link *l)
{
    rdma_peer *pe = &ep->peers[l->peer];
    if (!l->down)
        return l;
    for (int k = 0; k < pe->nlinks; k++)
        if (!pe->link[k].down)
            return &pe->link[k];
    return NULL;
}

void tether__rdma_fence(rdma_ep *ep, const rdma_link *l)
{
    rdma_peer *pe = &ep->peers[l->peer];
    for (int k = 0; k < pe->nlinks; k++)
        pe->link[k].fence = pe->link[k].taken_n;
    pe->fenced = 1;
}

int tether__rdma_orphaned(const rdma_link *d)
{
    return d->failed_over && (d->refeed != d->tx_seq || d->sendq);
}

rdma_link *tether__rdma_orphan(rdma_ep *ep, rdma_link *l)
{
    rdma_peer *pe = &ep->peers[l->peer];
    if (tether__rdma_carrier(ep, &pe->link[0]) != l) /* only the first live link carries them */
        return NULL;
    for (int i = 0; i < pe->nlinks; i++) {
        rdma_link *d = &pe->link[(l->turn + i) % pe->nlinks];
        if (d != l && tether__rdma_orphaned(d))
            return d;
    }
    return NULL;
}
