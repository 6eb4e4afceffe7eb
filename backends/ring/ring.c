/* backends/ring/ring.c - the ring TCP backend: links to the two ring neighbours only (MLX's ring).
 *
 * The per-rank hostfile (TETHER_HOSTFILE or MLX_HOSTFILE, MLX's format) is read unchanged: rank r
 * listens on every address of its entry and opens one link to every address of rank r + 1 (mod N),
 * so K addresses per rank (K cables, or `--connections-per-ip K` ports on one) give K parallel
 * links to each neighbour, link k always to address k. Every link starts with the handshake of the
 * TCP backends (job token, version, rank, size), all connects and accepts at once. Large messages
 * are striped over a neighbour's K links by the engine. Messages to other ranks go the shorter way
 * round as routed frames that every rank on the way passes on (backends/tcp/route.h) from its
 * progress thread, so a rank busy outside tether still forwards, and a failure anywhere reaches
 * every rank (backends/tcp/engine_wait.c). The core's ring algorithms send half of the data each
 * way, so both links of every rank carry data in both directions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/net/frame.h"
#include "backends/net/hop.h"
#include "backends/ring/ring.h"
#include "backends/tcp/world.h"
#include "core/params.h"
#include "core/transport.h"

/* How long a closing rank keeps passing messages on for others, until both neighbours close too. */
#define RING_LINGER_MS 2000
/* Up to this many ranks every other rank is a neighbour: the ring's links are a full mesh, so it
 * runs as the mesh does (the same caps, so the same algorithms; no routes, so no progress thread
 * and nothing to linger for), and a ring of 2 or 3 is exactly as fast as a mesh of 2 or 3. */
#define RING_ALL_NEIGHBOURS 3

static int ring_configured(const tether__config *cfg, char *why, size_t why_len)
{
    if (cfg->hostfile)
        return 1;
    snprintf(why, why_len, "%s is unset", TETHER__VARS(HOSTFILE));
    return 0;
}

/* 1 if address a of this rank is on a cable to some address of rank peer. */
static int towards(const tether__tcp_world *w, const char *a, int peer)
{
    for (int i = 0; i < w->table.naddrs[peer]; i++)
        if (tether__tcp_on_cable(a, w->table.addrs[peer][i].host))
            return 1;
    return 0;
}

/* 1 if address b of rank peer is on a cable to some address of this rank. */
static int reaches(const tether__tcp_world *w, const char *b)
{
    for (int i = 0; i < w->table.naddrs[w->rank]; i++)
        if (tether__tcp_on_cable(w->table.addrs[w->rank][i].host, b))
            return 1;
    return 0;
}

/* Links to the right neighbour: one per address of it on a cable to this rank, so a hostfile
 * listing every address of each host (not only those towards the left neighbour) works too; one
 * per address when none is (host names, routed networks; MLX's files, whose entries hold only the
 * addresses towards the left, give the same). Link k goes to the k-th of them. */
static int plan_right(const tether__config *cfg, tether__tcp_world *w, int right)
{
    const tether__hostaddr *all = w->table.addrs[right];
    int any = 0;
    for (int i = 0; i < w->table.naddrs[right]; i++)
        any |= reaches(w, all[i].host);
    for (int i = 0; i < w->table.naddrs[right]; i++)
        if (!any || reaches(w, all[i].host)) {
            if (!tether__addr_allowed(cfg, all[i].host))
                return tether__fail(TETHER_ECONFIG,
                                    "rank %d: address %s of rank %d (entry %d of %s) does not "
                                    "match %s",
                                    w->rank, all[i].host, right, i, cfg->hostfile,
                                    TETHER__VAR(IFACE_PRIORITY));
            TRY(tether__net_plan_add_addr(&w->plan, right, &all[i]));
        }
    w->plan.out_links[right] = w->plan.naddrs[right];
    return TETHER_OK;
}

/* Links from the left neighbour: the rule of plan_right seen from the other end, so both ends
 * count the same links (a disagreement fails the handshake with both counts). */
static int count_left(const tether__tcp_world *w, int left)
{
    int n = w->table.naddrs[w->rank], k = 0;
    for (int i = 0; i < n; i++)
        k += towards(w, w->table.addrs[w->rank][i].host, left);
    return k ? k : n;
}

/* With two ranks both neighbours are one rank: rank 0's links to rank 1 serve both ways, as the
 * mesh's one link per pair does (a second set, rank 1's to rank 0, striped every large message
 * over twice the sockets and made the ring 1.2-1.45x slower than the mesh from 4 MiB). */
static int plan_links(const tether__config *cfg, tether__tcp_world *w)
{
    int n = w->size, r = w->rank, right = (r + 1) % n, left = (r + n - 1) % n;
    w->plan.pin_addrs = 1;
    if (n == 1)
        return TETHER_OK;
    if (n > 2 || r == 0)
        TRY(plan_right(cfg, w, right));
    if (n > 2 || r == 1)
        w->plan.in_links[left] = count_left(w, left);
    for (int p = 0; p < n; p++) /* other ranks' addresses (rank 0's too, for rank 1 of two, which
                                   only accepts) only name them in messages */
        if (p != r && w->plan.naddrs[p] == 0)
            TRY(tether__tcp_world_addrs(cfg, w, p, 0));
    TLOG_INFO("ring: %d link%s to rank %d (right), %d from rank %d (left)",
              w->plan.out_links[right], w->plan.out_links[right] == 1 ? "" : "s", right,
              w->plan.in_links[left], left);
    return TETHER_OK;
}

static int route(const tether__tcp_world *w, tether__tcp_ep *ep)
{
    int *via = malloc((size_t)w->size * sizeof *via);
    if (!via)
        return tether__fail(TETHER_ENOMEM, "out of memory for the routes of %d ranks", w->size);
    for (int p = 0; p < w->size; p++)
        via[p] = p == w->rank ? p : tether__net_next_hop(w->rank, w->size, p);
    int rc = tether__tcp_ep_route(ep, via);
    free(via);
    return rc;
}

static int ring_open(const tether__config *cfg, tether__ep **out, int *rank, int *size)
{
    tether__tcp_world w;
    tether__tcp_ep *ep = NULL;
    int rc;
    TRY_GOTO(rc, tether__tcp_world_locate(cfg, 0, &w), done);
    if (w.size > TETHER__ROUTE_MAX_RANKS) {
        rc = tether__fail(TETHER_ECONFIG,
                          "the hostfile %s lists %d ranks; the ring takes at most %d",
                          cfg->hostfile, w.size, TETHER__ROUTE_MAX_RANKS);
        goto done;
    }
    TRY_GOTO(rc, plan_links(cfg, &w), done);
    TRY_GOTO(rc, tether__tcp_world_connect(&w, "ring", &ep), done);
    if (w.size > RING_ALL_NEIGHBOURS) { /* else the links make a full mesh: nothing is routed */
        TRY_GOTO(rc, route(&w, ep), fail);
        TRY_GOTO(rc, tether__tcp_progress_start(ep), fail);
    }
    *out = (tether__ep *)ep;
    *rank = w.rank;
    *size = w.size;
    goto done;
fail: /* the neighbours formed their links: tell them, so they fail now rather than time out */
    tether__tcp_abort((tether__ep *)ep, rc, tether_last_error());
    tether__tcp_close(ep);
done:
    tether__tcp_world_free(&w);
    return rc;
}

static void ring_close(tether__ep *ep)
{
    tether__tcp_progress_stop((tether__tcp_ep *)ep, RING_LINGER_MS);
    tether__tcp_close((tether__tcp_ep *)ep);
}

const tether__transport_ops tether__ring_ops = {
    .name = "ring",
    .configured = ring_configured,
    .usable = NULL,
    .open = ring_open,
    .caps = tether__tcp_caps, /* DIRECT up to 3 ranks; beyond, the core picks ring algorithms */
    TETHER__TCP_MESSAGE_OPS,
    .close = ring_close,
};
