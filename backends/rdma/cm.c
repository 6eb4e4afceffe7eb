/* backends/rdma/cm.c - the links through the RDMA connection manager: Linux, a hostfile of
 * addresses and no device matrix.
 *
 * Every rank listens through rdma_cm on its hostfile address (port picked by the manager, sent to
 * each peer on the side channel), and the lower rank of each pair connects to the higher's, as the
 * side channels do. rdma_resolve_addr and rdma_resolve_route pick the device, port, GID or LID and
 * the path from the peer's address; the QP is made on the cm_id's verbs context (rdma_create_qp
 * leaves it at INIT, where its receives are posted as ever) and brought to RTS by rdma_connect and
 * rdma_accept. A device's slot pool is sized by its links, so every route is resolved before any
 * QP is made: connection requests that come meanwhile wait, unanswered, until then. Every event is
 * acked as soon as it is read (rdma_destroy_id waits for events not acked), and every wait ends
 * at the set-up deadline. One RC link per peer: the device matrix remains for several cables, UC
 * and ring mode. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/net/socket.h"
#include "cables.h"
#include "cm.h"
#include "core/params.h"
#include "device.h"
#include "hostfile/hostfile.h"
#include "qp.h"
#include "rdma_impl.h"
#include "rdmacm.h"
#include "side.h"
#include "state.h"

#define HELLO_MAGIC 0x54434d31u /* "TCM1" */
#define RETRIES 7               /* the NIC's retries and RNR retries, as a matrix link's (qp.c) */

/* What an active side says in its connection request: who it is, and of which job. */
typedef struct cm_hello {
    uint32_t magic;
    int32_t rank;
    uint64_t token; /* FNV-1a of the job token: a stray job's request is refused */
} cm_hello;

typedef struct tether__rdma_cm {
    tether__rdmacm lib;
    struct rdma_event_channel *ch;
    struct rdma_cm_id *listen;
    tether__rank_hosts hosts;
    struct sockaddr_in *addr; /* per rank: its hostfile address; port: its rdma_cm listener */
    char *up;                 /* per rank: its connection is established */
    uint64_t token;
    int unrouted;    /* outgoing links whose route is not resolved yet */
    int unconnected; /* links not established yet */
    int pools_made;  /* every device's pool is there: requests are answered at once */
} tether__rdma_cm;

/* One event, copied out, so that it is acked at once. */
typedef struct cm_event {
    enum rdma_cm_event_type type;
    struct rdma_cm_id *id;
    int status;
    cm_hello hello;
    int has_hello;
} cm_event;

static uint64_t token_hash(const char *t)
{
    uint64_t h = 14695981039346656037ull;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 1099511628211ull;
    return h;
}

static const char *host_of(const rdma_ep *ep, int rank)
{
    return ep->cm->hosts.addrs[rank][0].host;
}

const char *tether__rdma_cm_status(int status)
{
    return status < 0     ? strerror(-status)
           : status == 8  ? "nobody listens there: invalid service ID"
           : status == 28 ? "its application or connection manager refused"
                          : "reject reason of the IB CM";
}

int tether__rdma_cm_addresses(const char *hostfile, tether__rank_hosts *hosts,
                              struct sockaddr_in **addr)
{
    TRY(tether__hostfile_load_ranks(hostfile, hosts));
    if (!(*addr = calloc((size_t)hosts->nranks, sizeof **addr)))
        return tether__fail(TETHER_ENOMEM, "rdma: out of memory for %d addresses", hosts->nranks);
    for (int r = 0; r < hosts->nranks; r++) {
        struct addrinfo hints = {.ai_family = AF_INET}, *res;
        int rc;
        if (hosts->naddrs[r] < 1)
            return tether__fail(TETHER_ECONFIG, "rdma: rank %d has no address in %s", r, hostfile);
        if ((rc = getaddrinfo(hosts->addrs[r][0].host, NULL, &hints, &res)) != 0)
            return tether__fail(TETHER_ECONFIG,
                                "rdma: rank %d's address %s (%s) is not an IPv4 address or a "
                                "name that has one: %s",
                                r, hosts->addrs[r][0].host, hostfile, gai_strerror(rc));
        memcpy(&(*addr)[r], res->ai_addr, sizeof **addr);
        freeaddrinfo(res);
    }
    return TETHER_OK;
}

/* The hostfile's addresses, one per rank of the job. */
static int load_addresses(const tether__config *cfg, rdma_ep *ep)
{
    tether__rdma_cm *cm = ep->cm;
    TRY(tether__rdma_cm_addresses(cfg->hostfile, &cm->hosts, &cm->addr));
    if (cm->hosts.nranks != ep->size)
        return tether__fail(TETHER_ECONFIG, "rdma: %s lists %d ranks but the job has %d",
                            cfg->hostfile, cm->hosts.nranks, ep->size);
    if (!(cm->up = calloc((size_t)ep->size, 1)))
        return tether__fail(TETHER_ENOMEM, "rdma: out of memory for %d ranks", ep->size);
    return TETHER_OK;
}

/* The device of context ctx: one already in use, or ctx adopted. */
static int device_of(rdma_ep *ep, struct ibv_context *ctx, rdma_dev **out)
{
    for (int d = 0; d < ep->ndev; d++)
        if (ep->devs[d].ctx == ctx) {
            *out = &ep->devs[d];
            return TETHER_OK;
        }
    *out = &ep->devs[ep->ndev++];
    return tether__rdma_dev_adopt(ep, *out, ctx);
}

/* l on the device of id, whose port rdma_cm picked: port 1, the one the backend queries and uses */
static int link_on(rdma_ep *ep, rdma_link *l, struct rdma_cm_id *id)
{
    if (id->port_num != 1)
        return tether__fail(TETHER_ECONFIG,
                            "rdma: rdma_cm reaches rank %d (%s) through port %u of %s; tether uses "
                            "port 1 of each device only",
                            l->peer, host_of(ep, l->peer), id->port_num, id->verbs->device->name);
    TRY(device_of(ep, id->verbs, &l->dev));
    l->first_slot = l->dev->nlinks++ * LINK_SLOTS;
    return TETHER_OK;
}

static int no_device_here(rdma_ep *ep, const char *why)
{
    return tether__fail(TETHER_ENET,
                        "rdma: no RDMA device behind %s, this rank's address (rdma_bind_addr: %s): "
                        "`rdma link show` lists the devices and their netdevs",
                        host_of(ep, ep->rank), why);
}

/* ep->cm_make_qp: a QP on l's cm_id, at INIT */
static struct ibv_qp *make_qp(rdma_ep *ep, rdma_link *l, struct ibv_qp_init_attr *ia)
{
    /* like ibv_create_qp, rdma_create_qp writes the granted caps back into ia */
    return ep->cm->lib.create_qp(l->cm_id, l->dev->pd, ia) ? NULL : l->cm_id->qp;
}

/* Listen on our own address, and tell every peer the port (the side channels, in peer order). */
static int listen_here(rdma_ep *ep, int64_t deadline)
{
    tether__rdma_cm *cm = ep->cm;
    struct sockaddr_in *me = &cm->addr[ep->rank];
    int flags;
    if (!(cm->ch = cm->lib.create_event_channel()))
        return tether__fail(TETHER_ENET, "rdma: rdma_create_event_channel failed: %s",
                            strerror(errno));
    if ((flags = fcntl(cm->ch->fd, F_GETFL)) < 0 ||
        fcntl(cm->ch->fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return tether__fail(TETHER_ENET, "rdma: fcntl(O_NONBLOCK) on the rdma_cm channel: %s",
                            strerror(errno));
    if (cm->lib.create_id(cm->ch, &cm->listen, NULL, RDMA_PS_TCP))
        return tether__fail(TETHER_ENET, "rdma: rdma_create_id failed: %s", strerror(errno));
    if (cm->lib.bind_addr(cm->listen, (struct sockaddr *)me))
        return no_device_here(ep, strerror(errno));
    if (!cm->listen->verbs)
        return no_device_here(ep, "bound, to no device");
    if (cm->lib.listen(cm->listen, ep->size))
        return tether__fail(TETHER_ENET, "rdma: rdma_listen on %s (%s) failed: %s",
                            host_of(ep, ep->rank), cm->listen->verbs->device->name,
                            strerror(errno));
    me->sin_port = cm->lib.get_src_port(cm->listen);
    for (int p = 0; p < ep->size; p++)
        if (p != ep->rank)
            TRY(tether__rdma_side_swap(ep, &ep->peers[p], p, &me->sin_port, &cm->addr[p].sin_port,
                                       sizeof me->sin_port, deadline));
    return TETHER_OK;
}

/* Our links: to higher ranks through a fresh cm_id resolving their address; from lower ranks on
 * the listener's device, where their requests come in. */
static int start_links(rdma_ep *ep)
{
    tether__rdma_cm *cm = ep->cm;
    for (int p = 0; p < ep->size; p++) {
        rdma_link *l = &ep->peers[p].link[0];
        if (p == ep->rank)
            continue;
        ep->peers[p].nlinks = 1;
        cm->unconnected++;
        if (p < ep->rank) {
            TRY(link_on(ep, l, cm->listen));
            continue;
        }
        if (cm->lib.create_id(cm->ch, &l->cm_id, l, RDMA_PS_TCP))
            return tether__fail(TETHER_ENET, "rdma: rdma_create_id for rank %d failed: %s", p,
                                strerror(errno));
        struct sockaddr_in src = cm->addr[ep->rank];
        src.sin_port = 0;
        if (cm->lib.resolve_addr(l->cm_id, (struct sockaddr *)&src, (struct sockaddr *)&cm->addr[p],
                                 TETHER__RDMA_CM_RESOLVE_MS))
            return tether__fail(TETHER_ENET,
                                "rdma: no RDMA device behind %s, rank %d's address "
                                "(rdma_resolve_addr: %s)",
                                host_of(ep, p), p, strerror(errno));
        cm->unrouted++;
    }
    return TETHER_OK;
}

/* Accept lower rank l->peer's request, held in l->cm_id, with a QP at INIT on its device. */
static int answer(rdma_ep *ep, rdma_link *l)
{
    tether__rdma_cm *cm = ep->cm;
    struct rdma_conn_param param = {.retry_count = RETRIES, .rnr_retry_count = RETRIES};
    if (l->cm_id->verbs != l->dev->ctx)
        return tether__fail(TETHER_ENET,
                            "rdma: rank %d's connection from %s came in on %s, not on %s where "
                            "this rank listens",
                            l->peer, host_of(ep, l->peer), l->cm_id->verbs->device->name,
                            l->dev->name);
    TRY(tether__rdma_qp_create(ep, l));
    if (cm->lib.accept(l->cm_id, &param))
        return tether__fail(TETHER_ENET, "rdma: rdma_accept of rank %d (%s) on %s failed: %s",
                            l->peer, host_of(ep, l->peer), l->dev->name, strerror(errno));
    return TETHER_OK;
}

/* Every route is known: the devices' pools, then the QPs; connect to higher ranks, answer the
 * lower ones that already asked. */
static int connect_all(rdma_ep *ep)
{
    tether__rdma_cm *cm = ep->cm;
    cm_hello hello = {.magic = HELLO_MAGIC, .rank = ep->rank, .token = cm->token};
    for (int d = 0; d < ep->ndev; d++)
        TRY(tether__rdma_dev_pool(ep, &ep->devs[d]));
    cm->pools_made = 1;
    for (int p = 0; p < ep->size; p++) {
        rdma_link *l = &ep->peers[p].link[0];
        struct rdma_conn_param param = {.private_data = &hello,
                                        .private_data_len = sizeof hello,
                                        .retry_count = RETRIES,
                                        .rnr_retry_count = RETRIES};
        if (p == ep->rank || !l->cm_id)
            continue;
        if (p < ep->rank) {
            TRY(answer(ep, l));
            continue;
        }
        TRY(tether__rdma_qp_create(ep, l));
        if (cm->lib.connect(l->cm_id, &param))
            return tether__fail(TETHER_ENET, "rdma: rdma_connect to rank %d at %s on %s failed: %s",
                                p, host_of(ep, p), l->dev->name, strerror(errno));
    }
    return TETHER_OK;
}

/* A lower rank asks: refused unless it is one of this job's that has not asked yet. */
static int on_request(rdma_ep *ep, const cm_event *e)
{
    tether__rdma_cm *cm = ep->cm;
    const cm_hello *h = &e->hello;
    rdma_link *l = e->has_hello && h->magic == HELLO_MAGIC && h->token == cm->token &&
                           h->rank >= 0 && h->rank < ep->rank
                       ? &ep->peers[h->rank].link[0]
                       : NULL;
    if (!l || l->cm_id) {
        TLOG_WARN("rdma: refused an rdma_cm connection request on %s: %s", host_of(ep, ep->rank),
                  !l ? "not from a lower rank of this job" : "that rank is already connected");
        cm->lib.reject(e->id, NULL, 0);
        cm->lib.destroy_id(e->id);
        return TETHER_OK;
    }
    l->cm_id = e->id;
    l->cm_id->context = l;
    return cm->pools_made ? answer(ep, l) : TETHER_OK;
}

static int on_event(rdma_ep *ep, const cm_event *e)
{
    tether__rdma_cm *cm = ep->cm;
    rdma_link *l = e->id->context;
    int p = l ? l->peer : -1;
    if (e->type == RDMA_CM_EVENT_CONNECT_REQUEST)
        return on_request(ep, e);
    if (!l) /* the listener's own, or a refused request's */
        return TETHER_OK;
    switch (e->type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (cm->lib.resolve_route(e->id, TETHER__RDMA_CM_RESOLVE_MS))
            return tether__fail(TETHER_ENET,
                                "rdma: route to %s (rank %d) failed "
                                "(rdma_resolve_route: %s)",
                                host_of(ep, p), p, strerror(errno));
        return TETHER_OK;
    case RDMA_CM_EVENT_ADDR_ERROR:
        return tether__fail(TETHER_ENET,
                            "rdma: no RDMA device behind %s, rank %d's address, reachable from "
                            "%s (rdma_resolve_addr: %s)",
                            host_of(ep, p), p, host_of(ep, ep->rank),
                            tether__rdma_cm_status(e->status));
    case RDMA_CM_EVENT_ROUTE_RESOLVED:
        TRY(link_on(ep, l, e->id));
        return --cm->unrouted == 0 ? connect_all(ep) : TETHER_OK;
    case RDMA_CM_EVENT_ROUTE_ERROR:
        return tether__fail(TETHER_ENET,
                            "rdma: route to %s (rank %d) failed (rdma_resolve_route: %s)",
                            host_of(ep, p), p, tether__rdma_cm_status(e->status));
    case RDMA_CM_EVENT_ESTABLISHED:
        cm->up[p] = 1;
        cm->unconnected--;
        return TETHER_OK;
    case RDMA_CM_EVENT_REJECTED:
        return tether__fail(
            TETHER_EPEER, "rdma: rank %d at %s rejected the connection from %s (%s, status %d)", p,
            host_of(ep, p), l->dev->name, tether__rdma_cm_status(e->status), e->status);
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
    case RDMA_CM_EVENT_DISCONNECTED:
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        return tether__fail(TETHER_EPEER, "rdma: connecting rank %d at %s on %s: %s (%s)", p,
                            host_of(ep, p), l && l->dev ? l->dev->name : "?",
                            cm->lib.event_str(e->type),
                            e->status < 0 ? strerror(-e->status) : "no answer");
    default:
        TLOG_INFO("rdma: rdma_cm event %s for rank %d ignored while connecting",
                  cm->lib.event_str(e->type), p);
        return TETHER_OK;
    }
}

/* The peers not connected yet, for a timeout's message. */
static void waiting_for(rdma_ep *ep, char *out, size_t len)
{
    size_t o = 0;
    out[0] = '\0';
    for (int p = 0; p < ep->size && o < len; p++) {
        if (p != ep->rank && !ep->cm->up[p])
            o += (size_t)snprintf(out + o, len - o, "%s%d (%s)", o ? ", " : "", p, host_of(ep, p));
    }
}

/* The next event, copied and acked; ETIMEDOUT at deadline. */
static int next_event(rdma_ep *ep, int64_t deadline, cm_event *out)
{
    tether__rdma_cm *cm = ep->cm;
    struct rdma_cm_event *ev;
    while (cm->lib.get_cm_event(cm->ch, &ev)) {
        int64_t left = deadline - tether__net_now_ms();
        struct pollfd pfd = {.fd = cm->ch->fd, .events = POLLIN};
        char who[256];
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return tether__fail(TETHER_ENET, "rdma: rdma_get_cm_event failed: %s", strerror(errno));
        if (left <= 0) {
            waiting_for(ep, who, sizeof who);
            return tether__fail(TETHER_ETIMEDOUT,
                                "rdma: rdma_cm connections timed out (%s); rank %d "
                                "(%s) still waits for rank(s) %s",
                                TETHER__VAR(TIMEOUT), ep->rank, host_of(ep, ep->rank),
                                who[0] ? who : "none");
        }
        poll(&pfd, 1, left < 100 ? (int)left : 100);
    }
    memset(out, 0, sizeof *out);
    out->type = ev->event;
    out->id = ev->id;
    out->status = ev->status;
    if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
        ev->param.conn.private_data_len >= sizeof out->hello) {
        memcpy(&out->hello, ev->param.conn.private_data, sizeof out->hello);
        out->has_hello = 1;
    }
    cm->lib.ack_cm_event(ev);
    return TETHER_OK;
}

int tether__rdma_cm_open(const tether__config *cfg, rdma_ep *ep, int64_t deadline_ms)
{
    char why[512];
    cm_event e;
    if (ep->uc)
        return tether__fail(TETHER_ECONFIG,
                            "rdma: %s=uc: rdma_cm connects RC QPs; UC needs the device "
                            "matrix (%s)",
                            TETHER__VAR(RDMA_QP), TETHER__VAR(IBV_DEVICES));
    if (!cfg->hostfile)
        return tether__fail(TETHER_ECONFIG,
                            "rdma: no device matrix (%s) and no hostfile "
                            "(%s) whose addresses rdma_cm could connect",
                            TETHER__VAR(IBV_DEVICES), TETHER__VAR(HOSTFILE));
    if (!(ep->cm = calloc(1, sizeof *ep->cm)))
        return tether__fail(TETHER_ENOMEM, "rdma: out of memory for the connection manager");
    if (tether__rdmacm_load(&ep->cm->lib, why, sizeof why))
        return tether__fail(TETHER_EUNAVAIL, "rdma: %s", why);
    ep->cm->token = token_hash(cfg->job_token);
    ep->cm_make_qp = make_qp;
    TRY(load_addresses(cfg, ep));
    TRY(listen_here(ep, deadline_ms));
    TRY(start_links(ep));
    if (ep->cm->unrouted == 0) /* the highest rank only answers */
        TRY(connect_all(ep));
    while (ep->cm->unconnected > 0) {
        TRY(next_event(ep, deadline_ms, &e));
        TRY(on_event(ep, &e));
    }
    for (RDMA_EACH_LINK(ep, l))
        ep->keeps |= tether__rdma_keeps(ep, l);
    return TETHER_OK;
}

int tether__rdma_cm_usable(char *why, size_t why_len)
{
    tether__rdmacm lib;
    if (tether__param_from(TETHER__P_IBV_DEVICES))
        return 1; /* the matrix names the devices: no connection manager */
    if (tether__rdmacm_load(&lib, why, why_len))
        return 0;
    tether__rdmacm_unload(&lib);
    return 1;
}

void tether__rdma_cm_close(rdma_ep *ep)
{
    tether__rdma_cm *cm = ep->cm;
    if (!cm)
        return;
    for (RDMA_EACH_LINK(ep, l)) {
        if (!l->cm_id)
            continue;
        if (l->qp) {
            cm->lib.disconnect(l->cm_id); /* the peer's QP errs at once, not at its timeout */
            cm->lib.destroy_qp(l->cm_id);
            l->qp = NULL;
        }
        cm->lib.destroy_id(l->cm_id);
        l->cm_id = NULL;
    }
    if (cm->listen)
        cm->lib.destroy_id(cm->listen);
    if (cm->ch)
        cm->lib.destroy_event_channel(cm->ch);
    tether__rdmacm_unload(&cm->lib);
    tether__rank_hosts_free(&cm->hosts);
    free(cm->addr);
    free(cm->up);
    free(cm);
    ep->cm = NULL;
}
