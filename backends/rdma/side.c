/* backends/rdma/side.c - the TCP side channel of each link: set-up exchange, then liveness, abort
 * and bye.
 *
 * The links form like the mesh backend's (coordinator bootstrap, lower rank connects, the usual
 * handshake), then carry the QP numbers, PSNs and GIDs before RTR. Afterwards they stay open: a
 * peer that dies closes them (its RDMA traffic just stops, which no completion may tell on UC),
 * abort() sends its reason on them, and close() sends a bye with the number of frames sent, so a
 * normal exit is told from a crash once every frame has arrived; between, heartbeats (heartbeat.c).
 * The side channels are a full mesh in ring mode too: they are small, and a death anywhere reaches
 * every rank directly. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backends/net/bootstrap.h"
#include "backends/net/setup.h"
#include "backends/net/socket.h"
#include "rdma_impl.h"
#include "side.h"

#ifdef MSG_NOSIGNAL
#define SEND_FLAGS (MSG_NOSIGNAL | MSG_DONTWAIT)
#else
#define SEND_FLAGS MSG_DONTWAIT /* SO_NOSIGPIPE is set on the socket instead (net/socket.c) */
#endif

typedef struct side_plan {
    int *out, *in, *naddrs;
    tether__hostaddr **addrs;
} side_plan;

static int plan_alloc(side_plan *p, int n)
{
    p->out = calloc((size_t)n, sizeof *p->out);
    p->in = calloc((size_t)n, sizeof *p->in);
    p->naddrs = calloc((size_t)n, sizeof *p->naddrs);
    p->addrs = calloc((size_t)n, sizeof *p->addrs);
    if (!p->out || !p->in || !p->naddrs || !p->addrs)
        return tether__fail(TETHER_ENOMEM, "rdma: out of memory planning %d side channels", n);
    return TETHER_OK;
}

static void plan_free(side_plan *p)
{
    free(p->out);
    free(p->in);
    free(p->naddrs);
    free(p->addrs);
}

/* One TCP link per pair: the lower rank connects to the address the coordinator handed out. */
int tether__rdma_side_open(const tether__config *cfg, rdma_ep *ep)
{
    tether__rank_hosts table;
    tether__net_links links = {0};
    side_plan sp = {0};
    int listen_fd = -1, rc;
    memset(&table, 0, sizeof table);
    TRY_GOTO(rc, tether__net_bootstrap(cfg, &table, &listen_fd), done);
    TRY_GOTO(rc, plan_alloc(&sp, ep->size), done);
    for (int p = 0; p < ep->size; p++) {
        sp.out[p] = p > ep->rank;
        sp.in[p] = p < ep->rank;
        sp.naddrs[p] = 1;
        sp.addrs[p] = table.addrs[p];
    }
    tether__net_plan plan = {.rank = ep->rank,
                             .size = ep->size,
                             .token = cfg->job_token,
                             .timeout_ms = cfg->timeout_ms,
                             .nlisten = 1,
                             .listen_fds = &listen_fd,
                             .out_links = sp.out,
                             .in_links = sp.in,
                             .naddrs = sp.naddrs,
                             .addrs = sp.addrs,
                             .backend = "rdma"};
    tether__config_agreed(cfg, plan.settings);
    TRY_GOTO(rc, tether__net_setup(&plan, &links), done);
    for (int p = 0; p < ep->size; p++) {
        if (p == ep->rank)
            continue;
        ep->peers[p].fd = links.fds[p][0];
        links.fds[p][0] = -1;
        snprintf(ep->peers[p].addr, sizeof ep->peers[p].addr, "%s", links.addr[p]);
    }
done:
    if (links.fds)
        tether__net_links_free(&links);
    if (listen_fd >= 0)
        close(listen_fd);
    plan_free(&sp);
    tether__rank_hosts_free(&table);
    return rc;
}

int tether__rdma_side_swap(rdma_ep *ep, rdma_peer *pe, int peer, const void *mine, void *theirs,
                           size_t len, int64_t deadline_ms)
{
    char what[128];
    (void)ep;
    snprintf(what, sizeof what, "rank %d (%s), RDMA set-up", peer, pe->addr);
    TRY(tether__net_write_all(pe->fd, mine, len, deadline_ms, what));
    return tether__net_read_all(pe->fd, theirs, len, deadline_ms, what);
}

int tether__rdma_side_tell(rdma_ep *ep, int peer, uint32_t type, const void *payload, size_t len)
{
    unsigned char msg[SIDE_HDR + SIDE_TEXT_MAX];
    uint32_t h[4] = {type, 0, 0, (uint32_t)len};
    rdma_peer *pe = &ep->peers[peer];
    if (pe->fd < 0 || pe->eof)
        return EPIPE;
    memcpy(msg, h, sizeof h);
    memcpy(msg + SIDE_HDR, payload, len);
    return send(pe->fd, msg, SIDE_HDR + len, SEND_FLAGS) < 0 ? errno : 0;
}

/* Best effort and never blocking: abort and close must not hang on a peer that stopped reading. */
void tether__rdma_side_say(rdma_ep *ep, uint32_t type, int code, const char *text)
{
    unsigned char msg[SIDE_HDR + SIDE_TEXT_MAX];
    size_t tlen = text ? strlen(text) : 0;
    if (tlen > SIDE_TEXT_MAX)
        tlen = SIDE_TEXT_MAX;
    for (int p = 0; p < ep->size; p++) {
        rdma_peer *l = &ep->peers[p];
        uint32_t h[4] = {type, (uint32_t)code, 0, (uint32_t)tlen};
        if (p == ep->rank || l->fd < 0 || l->eof)
            continue;
        if (type == SIDE_BYE) {
            h[2] = (uint32_t)l->nlinks;
            h[3] = (uint32_t)(tlen = 4 * (size_t)l->nlinks);
            for (int k = 0; k < l->nlinks; k++)
                memcpy(msg + SIDE_HDR + 4 * k, &l->link[k].tx_seq, 4);
        } else {
            memcpy(msg + SIDE_HDR, text ? text : "", tlen);
        }
        memcpy(msg, h, sizeof h);
        if (send(l->fd, msg, SIDE_HDR + tlen, SEND_FLAGS) < 0)
            TLOG_INFO("rdma: telling rank %d (%s) we %s failed: %s", p, l->addr,
                      type == SIDE_BYE ? "close" : "abort", strerror(errno));
    }
}
