/* backends/tcp/engine_open.c - creating an endpoint over the links set-up formed: taking the
 * sockets, reading the engine's settings, the memory path's offers, and the routes of a ring. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/net/socket.h"
#include "core/host.h"
#include "core/params.h"
#include "engine_impl.h"
#include "engine_wait.h"

/* Links between processes of one host get the smaller send buffer tether__net_local_sndbuf_default
 * explains and a receive window as large (local_sndbuf bytes; 0 leaves both as they are). */
static int take_links(tether__tcp_ep *ep, tether__net_links *links, long local_sndbuf)
{
    ep->one_host = 1;
    ep->packet = SIZE_MAX;
    for (int p = 0; p < ep->size; p++) {
        int k = links->nlinks[p];
        ep->nlinks[p] = k;
        memcpy(ep->addr[p], links->addr[p], sizeof ep->addr[p]);
        ep->links[p] = calloc((size_t)(k ? k : 1), sizeof **ep->links);
        if (!ep->links[p])
            return tether__fail(TETHER_ENOMEM, "out of memory for the links to rank %d", p);
        ep->links[p][0].newfd = -1; /* a queue-only link's, when k is 0 */
        for (int i = 0; i < k; i++) {
            tether__link *l = &ep->links[p][i];
            l->peer = p;
            l->index = i;
            l->nlinks = k;
            l->fd = links->fds[p][i];
            links->fds[p][i] = -1;
            l->dialed = links->dialed[p][i];
            l->newfd = -1;
            l->rings_seen = -1;
            int local = tether__net_same_host(l->fd);
            ep->one_host &= local;
            ep->peers_here += local && i == 0;
            size_t seg = tether__net_segment(l->fd);
            seg = seg > TETHER__FRAME_SIZE ? seg - TETHER__FRAME_SIZE : 0;
            ep->packet = seg < ep->packet ? seg : ep->packet;
            if (local && local_sndbuf) {
                char what[TETHER__ADDR_TEXT + 48];
                snprintf(what, sizeof what, "link %d with rank %d (%s)", i, p, links->addr[p]);
                TRY(tether__net_set_local_bufs(l->fd, local_sndbuf, what));
            }
            ep->flat[ep->nflat++] = l;
            if (!(l->rbuf = malloc(TETHER__RBUF_SIZE)))
                return tether__fail(TETHER_ENOMEM, "out of memory for the receive buffers");
        }
    }
    if (ep->packet == SIZE_MAX)
        ep->packet = 0; /* no socket link */
    return TETHER_OK;
}

/* The ranks of this host, this one included, as far as the links show: the whole job where every
 * link is local (a ring's rank sees only its neighbours, as core/group.c notes), else those linked
 * through this host. */
static int ranks_here(const tether__tcp_ep *ep)
{
    return ep->one_host ? ep->size : ep->peers_here + 1;
}

/* Some peer has no link of its own: the ring of 4 or more ranks, whose messages to it pass
 * through neighbours (tether__tcp_ep_route). Such an endpoint keeps its sockets: its progress
 * thread and its calls read every link eagerly (routed frames must pass on), so a neighbour that
 * writes faster than this rank consumes is held back only by what a socket buffers; through a
 * ring, a broadcast root ran 22,823 calls ahead of a descheduled neighbour, whose receives then
 * searched that many kept messages each (bench -c all, N = 4, under load). */
static int routed(const tether__tcp_ep *ep)
{
    for (int p = 0; p < ep->size; p++)
        if (p != ep->rank && ep->nlinks[p] == 0)
            return 1;
    return 0;
}

int tether__tcp_ep_create(tether__net_links *links, int rank, const char *backend,
                          tether__tcp_ep **out)
{
    long max_io, local_sndbuf;
    int total = 0, rc, set;
    TRY(tether__param_long(TETHER__P_TCP_MAX_IO, &max_io));
    TRY(set = tether__param_long(TETHER__P_TCP_LOCAL_SNDBUF, &local_sndbuf));
    if (!set) /* the row's default is computed here */
        local_sndbuf = tether__net_local_sndbuf_default();
    if (local_sndbuf > 0 && local_sndbuf < TETHER__NET_LOCAL_SNDBUF_MIN)
        return tether__fail(TETHER_ECONFIG,
                            "%s=%ld: expected 0 (the system's) or at least "
                            "%ld bytes; smaller buffers stall loopback transfers",
                            TETHER__VAR(TCP_LOCAL_SNDBUF), local_sndbuf,
                            TETHER__NET_LOCAL_SNDBUF_MIN);
    for (int p = 0; p < links->size; p++)
        total += links->nlinks[p];
    tether__tcp_ep *ep = calloc(1, sizeof *ep);
    if (!ep)
        return tether__fail(TETHER_ENOMEM, "out of memory for the %s endpoint", backend);
    pthread_mutex_init(&ep->mu, NULL);
    ep->backend = backend;
    ep->rank = rank;
    ep->size = links->size;
    ep->max_io = (uint64_t)max_io;
    ep->links = calloc((size_t)ep->size, sizeof *ep->links);
    ep->nlinks = calloc((size_t)ep->size, sizeof *ep->nlinks);
    ep->flat = calloc((size_t)(total + links->size), sizeof *ep->flat); /* + queue-only links */
    ep->addr = calloc((size_t)ep->size, sizeof *ep->addr);
    ep->routes = (tether__routes){.rank = rank, .size = ep->size, .nlinks = ep->nlinks};
    if (!ep->links || !ep->nlinks || !ep->flat || !ep->addr)
        rc = tether__fail(TETHER_ENOMEM, "out of memory for the %s endpoint", backend);
    else if ((rc = take_links(ep, links, local_sndbuf)) == TETHER_OK &&
             (rc = tether__cma_min(&ep->cma_min)) == 0 &&
             (rc = tether__shm_config(ep->size, &ep->shm_cap)) == 0) {
        if (routed(ep))
            ep->shm_cap = 0;
        int set = tether__param_from(TETHER__P_TCP_CMA_MIN) || !ep->cma_min;
        int crowded = tether__host_crowded(ranks_here(ep));
        ep->shm_cma_min = set ? ep->cma_min : crowded ? TETHER__SHM_CMA_MIN : 0;
        ep->shm_copy_min = set ? ep->cma_min : crowded ? TETHER__SHM_COPY_MIN : 0;
        rc = tether__tcp_negotiate(ep, links->timeout_ms);
    }
    if (rc < 0) {
        ep->err = rc; /* never formed: no bye to anyone */
        tether__tcp_close(ep);
        return rc;
    }
    *out = ep;
    return TETHER_OK;
}

int tether__tcp_ep_route(tether__tcp_ep *ep, const int *via)
{
    if (!(ep->routes.via = malloc((size_t)ep->size * sizeof *ep->routes.via)))
        return tether__fail(TETHER_ENOMEM, "out of memory for the routes of %d ranks", ep->size);
    memcpy(ep->routes.via, via, (size_t)ep->size * sizeof *ep->routes.via);
    for (int p = 0; p < ep->size; p++) {
        if (p == ep->rank || ep->nlinks[p] > 0)
            continue;
        /* take_links allocated one zeroed link for every peer without sockets */
        tether__link *q = &ep->links[p][0];
        q->fd = -1;
        q->peer = p;
        q->nlinks = 1;
        ep->flat[ep->nflat + ep->nvirt++] = q;
    }
    return TETHER_OK;
}
