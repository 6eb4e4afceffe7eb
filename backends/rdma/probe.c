/* backends/rdma/probe.c - the transport's probe for any-source receives (core/p2p.c): has the next
 * message of a tag from a peer arrived, unclaimed? */
#include "probe.h"
#include "io.h"
#include "rdma_impl.h"
#include "state.h"

int tether__rdma_probe(tether__ep *tep, int peer, tether__tag tag)
{
    rdma_ep *ep = (rdma_ep *)tep;
    int moved = 0, rc;
    pthread_mutex_lock(&ep->mu);
    tether__rdma_poll_cqs(ep, &moved);
    /* The first lane's queue holds a frame of every message from peer, a forwarded one too. */
    rdma_peer *pe = &ep->peers[peer];
    rc = ep->err ? tether__fail(ep->err, "%s", ep->errmsg)
                 : tether__rxq_holds(&pe->unexpected[0], tag);
    /* A linked peer that said bye, every frame of its own in and handled: a message not there
     * will never come (tether__rdma_gone_check's rule). A forwarded one's origin is not known to
     * have closed: the receive waits (tether__rdma_stranded_check ends it). */
    if (rc == 0 && pe->nlinks > 0 && tether__rdma_all_in(pe, 0))
        rc = TETHER__PROBE_GONE;
    pthread_mutex_unlock(&ep->mu);
    return rc;
}
