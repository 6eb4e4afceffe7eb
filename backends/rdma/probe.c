/* backends/rdma/probe.c - the transport's probe for any-source receives (core/p2p.c): has the next
 * message of a tag from a peer arrived, unclaimed? */
#include "rdma_impl.h"

int tether__rdma_probe(tether_ep *tep, int peer, tether_tag tag)
{
    rdma_ep *ep = (rdma_ep *)tep;
    int moved = 0, rc;
    pthread_mutex_lock(&ep->mu);
    tether__rdma_poll_cqs(ep, &moved);
    /* The first lane's queue holds a frame of every message from peer, a forwarded one too. */
    rc = ep->err ? tether__fail(ep->err, "%s", ep->errmsg)
                 : tether__rxq_holds(&ep->peers[peer].unexpected[0], tag);
    pthread_mutex_unlock(&ep->mu);
    return rc;
}
