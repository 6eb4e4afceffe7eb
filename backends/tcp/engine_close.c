/* backends/tcp/engine_close.c - closing an endpoint: its threads stopped, a bye to every peer,
 * everything freed. */
#include <stdlib.h>
#include <unistd.h>

#include "engine_break.h"
#include "engine_core.h"
#include "engine_ctrl.h"
#include "engine_impl.h"
#include "engine_rejoin.h"

static void log_link_bytes(const tether__tcp_ep *ep)
{
    for (int i = 0; i < ep->nflat; i++) {
        const tether__link *l = ep->flat[i];
        if (l->backs)
            TLOG_INFO("link %d with rank %d (%s): sent %llu bytes, received %llu; back %u "
                      "time%s, since then sent %llu bytes, received %llu",
                      l->index, l->peer, ep->addr[l->peer], (unsigned long long)l->bytes_sent,
                      (unsigned long long)l->bytes_recvd, l->backs, l->backs == 1 ? "" : "s",
                      (unsigned long long)(l->bytes_sent - l->back_sent),
                      (unsigned long long)(l->bytes_recvd - l->back_recvd));
        else
            TLOG_INFO("link %d with rank %d (%s): sent %llu bytes, received %llu", l->index,
                      l->peer, ep->addr[l->peer], (unsigned long long)l->bytes_sent,
                      (unsigned long long)l->bytes_recvd);
    }
}

void tether__tcp_close(tether__tcp_ep *ep)
{
    if (!ep)
        return;
    tether__heartbeat_stop(ep->beat); /* first: it queues frames, and the bye must be the last */
    ep->beat = NULL;
    tether__tcp_rejoin_stop(ep); /* nothing comes back any more */
    tether__tcp_progress_stop(ep, 0);
    pthread_mutex_lock(&ep->mu);
    log_link_bytes(ep);
    tether__tcp_cma_withdraw(ep);
    if (!ep->err)
        tether__tcp_say_bye(ep);
    for (int i = 0; i < ep->nflat + ep->nvirt; i++) {
        tether__link *l = ep->flat[i];
        tether__tcp_lane_clear(l);
        tether__tcp_tx_clear(l);
        tether__tcp_rx_clear(ep, l);
        if (l->fd >= 0)
            close(l->fd);
        if (l->shm) /* the peer's mapping stays until it closes too */
            tether__shm_close(l->shm);
        free(l->shm);
        free(l->rbuf);
    }
    while (ep->live)
        tether__tcp_req_free(ep, (struct tether__req *)ep->live);
    while (ep->nspare > 0)
        free(ep->spare[--ep->nspare]);
    tether__rxcache_clear(&ep->rxcache);
    for (int p = 0; ep->links && p < ep->size; p++)
        free(ep->links[p]);
    free(ep->links);
    free(ep->nlinks);
    free(ep->flat);
    tether__net_records_free(&ep->records);
    free(ep->addr);
    free(ep->routes.via);
    pthread_mutex_unlock(&ep->mu);
    pthread_mutex_destroy(&ep->mu);
    free(ep);
}
