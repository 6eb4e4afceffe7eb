/* backends/rdma/cm_report.c - `tether check`: what rdma_cm picks to reach each address of the
 * hostfile (device, port, GID, and LID on InfiniBand), or why it cannot, as the rdma backend would
 * see it on Linux without a device matrix. From this rank's own address where TETHER_RANK names
 * one, else from wherever the routing table says. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/net/socket.h"
#include "cm.h"
#include "rdma.h"
#include "rdmacm.h"

typedef struct report {
    char *out;
    size_t len, used;
} report;

static void say(report *r, const char *fmt, ...) TETHER__PRINTF(2, 3);
static void say(report *r, const char *fmt, ...)
{
    va_list ap;
    if (r->used >= r->len)
        return;
    va_start(ap, fmt);
    int n = vsnprintf(r->out + r->used, r->len - r->used, fmt, ap);
    va_end(ap);
    r->used += n > 0 ? (size_t)n : 0;
}

/* The next event of ch, acked: its type and status; -1 at deadline. */
static int next(tether__rdmacm *lib, struct rdma_event_channel *ch, int64_t deadline, int *status)
{
    struct rdma_cm_event *ev;
    int type;
    while (lib->get_cm_event(ch, &ev)) {
        int64_t left = deadline - tether__net_now_ms();
        struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
        if ((errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) || left <= 0)
            return -1;
        poll(&pfd, 1, (int)left);
    }
    type = ev->event;
    *status = ev->status;
    lib->ack_cm_event(ev);
    return type;
}

static const char *gid_text(const union ibv_gid *g, char *buf, size_t len)
{
    return inet_ntop(AF_INET6, g->raw, buf, (socklen_t)len) ? buf : "?";
}

/* The path of a resolved route: GIDs, and LIDs where the fabric has them (InfiniBand). */
static void describe(report *r, const struct rdma_cm_id *id)
{
    char sgid[INET6_ADDRSTRLEN], dgid[INET6_ADDRSTRLEN];
    const struct ibv_sa_path_rec *p = id->route.num_paths > 0 ? id->route.path_rec : NULL;
    say(r, "%s port %u", id->verbs->device->name, id->port_num);
    if (p)
        say(r, ", GID %s -> %s", gid_text(&p->sgid, sgid, sizeof sgid),
            gid_text(&p->dgid, dgid, sizeof dgid));
    if (p && p->dlid)
        say(r, ", LID %u -> %u", ntohs(p->slid), ntohs(p->dlid));
    say(r, "\n");
}

/* One address: resolved, its route resolved, described; or what failed. */
static void probe(report *r, tether__rdmacm *lib, struct rdma_event_channel *ch,
                  struct sockaddr_in *src, struct sockaddr_in *dst)
{
    struct rdma_cm_id *id;
    int64_t deadline = tether__net_now_ms() + 2 * TETHER__RDMA_CM_RESOLVE_MS + 1000;
    int type, status = 0;
    if (lib->create_id(ch, &id, NULL, RDMA_PS_TCP)) {
        say(r, "rdma_create_id failed: %s\n", strerror(errno));
        return;
    }
    if (lib->resolve_addr(id, (struct sockaddr *)src, (struct sockaddr *)dst,
                          TETHER__RDMA_CM_RESOLVE_MS))
        say(r, "no RDMA device behind it (rdma_resolve_addr: %s)\n", strerror(errno));
    else if ((type = next(lib, ch, deadline, &status)) != RDMA_CM_EVENT_ADDR_RESOLVED)
        say(r, "no RDMA device behind it (%s: %s)\n",
            type < 0 ? "rdma_resolve_addr" : lib->event_str(type),
            type < 0 ? "no answer" : tether__rdma_cm_status(status));
    else if (lib->resolve_route(id, TETHER__RDMA_CM_RESOLVE_MS))
        say(r, "no route (rdma_resolve_route: %s)\n", strerror(errno));
    else if ((type = next(lib, ch, deadline, &status)) != RDMA_CM_EVENT_ROUTE_RESOLVED)
        say(r, "no route (%s: %s)\n", type < 0 ? "rdma_resolve_route" : lib->event_str(type),
            type < 0 ? "no answer" : tether__rdma_cm_status(status));
    else
        describe(r, id);
    lib->destroy_id(id);
}

void tether__rdma_cm_report(const tether__config *cfg, char *out, size_t len)
{
    report r = {out, len, 0};
    tether__rdmacm lib;
    tether__rank_hosts hosts;
    struct sockaddr_in *addr = NULL;
    struct rdma_event_channel *ch;
    char why[512];
    int flags;
    out[0] = '\0';
    memset(&hosts, 0, sizeof hosts);
    if (!cfg->hostfile || cfg->ibv_devices || tether__rdmacm_load(&lib, why, sizeof why))
        return; /* not this backend's case, or the backends' lines say why */
    if (tether__rdma_cm_addresses(cfg->hostfile, &hosts, &addr) != TETHER_OK)
        say(&r, "  %s\n", tether_last_error());
    else if (!(ch = lib.create_event_channel()))
        say(&r, "  rdma_create_event_channel failed: %s\n", strerror(errno));
    else {
        struct sockaddr_in *src =
            cfg->rank >= 0 && cfg->rank < hosts.nranks ? &addr[cfg->rank] : NULL;
        if ((flags = fcntl(ch->fd, F_GETFL)) >= 0)
            fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK);
        for (int p = 0; p < hosts.nranks; p++) {
            say(&r, "  rank %d %s: ", p, hosts.addrs[p][0].host);
            probe(&r, &lib, ch, src, &addr[p]);
        }
        lib.destroy_event_channel(ch);
    }
    free(addr);
    tether__rank_hosts_free(&hosts);
    tether__rdmacm_unload(&lib);
}
