/* backends/mesh/mesh.c - the full-mesh TCP backend: one link between every pair of ranks.
 *
 * The rank table comes from the per-rank hostfile (TETHER_HOSTFILE, MLX's format) or from the
 * coordinator bootstrap (TETHER_COORDINATOR). Rank r listens on every address of its entry; the
 * lower rank of each pair connects, the higher accepts. With several addresses per rank (one per
 * cable) rank i reaches rank j at an address of j in the subnet of one of i's addresses, else the
 * first that answers. Messages then go through the TCP engine (backends/tcp/engine.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/mesh/mesh.h"
#include "backends/tcp/bootstrap.h"
#include "backends/tcp/engine.h"
#include "core/transport.h"

/* Where this rank is and whom it connects to: the table, its listeners, and the plan (per peer
 * the addresses to try in order). */
typedef struct mesh_world {
    tether_rank_hosts table;
    int rank, size;
    int nlisten;
    int *listen_fds;
    tether__tcp_plan plan;
} mesh_world;

static int mesh_configured(const tether_config *cfg, char *why, size_t why_len)
{
    if (cfg->hostfile || cfg->coordinator)
        return 1;
    snprintf(why, why_len, "TETHER_HOSTFILE and TETHER_COORDINATOR are unset");
    return 0;
}

static int load_hostfile(const tether_config *cfg, mesh_world *w)
{
    TRY(tether_hostfile_load_ranks(cfg->hostfile, &w->table));
    int n = w->table.nranks;
    if (cfg->rank < 0)
        return tether__fail(TETHER_ECONFIG,
                            "TETHER_RANK (or MLX_RANK) is unset: with the hostfile %s it must "
                            "be 0 to %d",
                            cfg->hostfile, n - 1);
    if (cfg->rank >= n)
        return tether__fail(TETHER_ECONFIG,
                            "TETHER_RANK=%d is out of range: the hostfile %s lists %d ranks "
                            "(0 to %d)",
                            cfg->rank, cfg->hostfile, n, n - 1);
    if (cfg->size >= 0 && cfg->size != n)
        return tether__fail(TETHER_ECONFIG,
                            "TETHER_SIZE=%d disagrees with the hostfile %s, which lists %d "
                            "ranks",
                            cfg->size, cfg->hostfile, n);
    return TETHER_OK;
}

/* Listen on every address of this rank's entry, each allowed by TETHER_IFACE_PRIORITY. */
static int listen_all(const tether_config *cfg, mesh_world *w)
{
    int n = w->table.naddrs[w->rank], port;
    w->listen_fds = malloc((size_t)n * sizeof *w->listen_fds);
    if (!w->listen_fds)
        return tether__fail(TETHER_ENOMEM, "out of memory for %d listeners", n);
    for (int i = 0; i < n; i++) {
        const tether_hostaddr *a = &w->table.addrs[w->rank][i];
        if (!tether__addr_allowed(cfg, a->host))
            return tether__fail(TETHER_ECONFIG,
                                "rank %d: address %s (entry %d of %s) does not match "
                                "TETHER_IFACE_PRIORITY: remove it or widen the prefixes",
                                w->rank, a->host, i, cfg->hostfile);
        TRY(tether__tcp_listen(a->host, a->port, &w->listen_fds[i], &port));
        w->nlisten++;
    }
    return TETHER_OK;
}

/* 1 if addr is in the subnet of one of this rank's own addresses. */
static int near(const mesh_world *w, const char *addr)
{
    for (int i = 0; i < w->table.naddrs[w->rank]; i++)
        if (tether__tcp_same_subnet(w->table.addrs[w->rank][i].host, addr))
            return 1;
    return 0;
}

/* The addresses of peer to try, allowed ones only: same subnet first, then hostfile order. */
static int order_addrs(const tether_config *cfg, mesh_world *w, int peer)
{
    const tether_hostaddr *all = w->table.addrs[peer];
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < w->table.naddrs[peer]; i++)
            if (tether__addr_allowed(cfg, all[i].host) && near(w, all[i].host) == (pass == 0))
                TRY(tether__tcp_plan_add_addr(&w->plan, peer, &all[i]));
    if (w->plan.naddrs[peer] == 0 && w->plan.out_links[peer] > 0)
        return tether__fail(TETHER_ECONFIG,
                            "rank %d: no address of rank %d in %s matches TETHER_IFACE_PRIORITY",
                            w->rank, peer, cfg->hostfile ? cfg->hostfile : "the table");
    return TETHER_OK;
}

/* Lower rank connects, higher accepts: one link per pair. */
static int plan_links(const tether_config *cfg, mesh_world *w)
{
    TRY(tether__tcp_plan_init(&w->plan, w->rank, w->size, cfg));
    w->plan.nlisten = w->nlisten;
    w->plan.listen_fds = w->listen_fds;
    for (int p = 0; p < w->size; p++) {
        w->plan.out_links[p] = p > w->rank;
        w->plan.in_links[p] = p < w->rank;
        if (p != w->rank)
            TRY(order_addrs(cfg, w, p));
    }
    return TETHER_OK;
}

static void world_free(mesh_world *w)
{
    for (int i = 0; i < w->nlisten; i++)
        close(w->listen_fds[i]);
    free(w->listen_fds);
    tether__tcp_plan_free(&w->plan);
    tether_rank_hosts_free(&w->table);
}

/* The table and listeners, from the hostfile or the coordinator. */
static int locate(const tether_config *cfg, mesh_world *w)
{
    if (cfg->hostfile) {
        TRY(load_hostfile(cfg, w));
        w->rank = cfg->rank;
        w->size = w->table.nranks;
        return listen_all(cfg, w);
    }
    if (!(w->listen_fds = malloc(sizeof *w->listen_fds)))
        return tether__fail(TETHER_ENOMEM, "out of memory for a listener");
    TRY(tether__tcp_bootstrap(cfg, &w->table, &w->listen_fds[0]));
    w->nlisten = 1;
    w->rank = cfg->rank;
    w->size = cfg->size;
    return TETHER_OK;
}

static int mesh_open(const tether_config *cfg, tether_ep **out, int *rank, int *size)
{
    mesh_world w;
    tether__tcp_links links = {0};
    tether__tcp_ep *ep = NULL;
    int rc;
    memset(&w, 0, sizeof w);
    TRY_GOTO(rc, locate(cfg, &w), done);
    TRY_GOTO(rc, plan_links(cfg, &w), done);
    TRY_GOTO(rc, tether__tcp_setup(&w.plan, &links), done);
    TRY_GOTO(rc, tether__tcp_ep_create(&links, w.rank, "mesh", &ep), done);
    *out = (tether_ep *)ep;
    *rank = w.rank;
    *size = w.size;
done:
    if (links.fds)
        tether__tcp_links_free(&links);
    world_free(&w);
    return rc;
}

/* The engine is the whole endpoint of this backend. */
static tether__tcp_ep *engine(tether_ep *ep)
{
    return (tether__tcp_ep *)ep;
}

static unsigned mesh_caps(const tether_ep *ep)
{
    (void)ep;
    return TETHER_CAP_DIRECT;
}

static int mesh_isend(tether_ep *ep, int peer, const void *buf, size_t len, tether_tag tag,
                      tether_req **out)
{
    return tether__tcp_isend(engine(ep), peer, buf, len, tag, out);
}

static int mesh_irecv(tether_ep *ep, int peer, void *buf, size_t len, tether_tag tag,
                      tether_req **out)
{
    return tether__tcp_irecv(engine(ep), peer, buf, len, tag, out);
}

static int mesh_test(tether_ep *ep, tether_req *r, int *done)
{
    return tether__tcp_test(engine(ep), r, done);
}

static int mesh_wait(tether_ep *ep, int timeout_ms)
{
    return tether__tcp_wait(engine(ep), timeout_ms);
}

static void mesh_abort(tether_ep *ep, int code, const char *msg)
{
    tether__tcp_abort(engine(ep), code, msg);
}

static void mesh_close(tether_ep *ep)
{
    tether__tcp_close(engine(ep));
}

const tether_transport_ops tether_mesh_ops = {
    .name = "mesh",
    .configured = mesh_configured,
    .usable = NULL,
    .open = mesh_open,
    .caps = mesh_caps,
    .isend = mesh_isend,
    .irecv = mesh_irecv,
    .test = mesh_test,
    .wait = mesh_wait,
    .abort = mesh_abort,
    .close = mesh_close,
};
