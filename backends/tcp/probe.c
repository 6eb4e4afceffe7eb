/* backends/tcp/probe.c - has the next message of a tag from a peer arrived, unclaimed? The probe
 * an any-source receive asks each peer in turn (core/p2p.c); it only reads the engine's queues. */
#include "probe.h"

#include "engine_impl.h"

int tether__tcp_op_probe(tether_ep *tep, int peer, tether_tag tag)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
    pthread_mutex_lock(&ep->mu);
    /* An any-source receive wants whatever comes, so the links a message from peer arrives on
     * (its own, or the neighbour's a routed one passes) are drained: frames that no receive has
     * asked for are read now, as unexpected, where tether__tcp_read(all = 0) would leave them in
     * the socket. */
    tether__link *first = tether__tcp_hop(ep, peer);
    for (int k = 0; k < first->nlinks && !ep->err; k++)
        if (first[k].fd >= 0 && !first[k].eof)
            tether__tcp_read(ep, &first[k], 1);
    /* Link 0 carries a frame of every message from peer, a routed one too (its queue-only link). */
    int rc = ep->err ? tether__fail(ep->err, "%s", ep->errmsg)
                     : tether__rxq_holds(&ep->links[peer][0].unexpected, tag);
    pthread_mutex_unlock(&ep->mu);
    return rc;
}
