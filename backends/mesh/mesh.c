/* backends/mesh/mesh.c - the full-mesh TCP backend: links between every pair of ranks.
 *
 * The rank table comes from the per-rank hostfile (TETHER_HOSTFILE, MLX's format) or from the
 * coordinator bootstrap (TETHER_COORDINATOR). Rank r listens on every address of its entry; the
 * lower rank of each pair connects, the higher accepts. With several addresses per rank (one per
 * cable) a pair gets one link per cable the two share (an address of each in one subnet; loopback
 * addresses all count as one subnet), link k pinned to cable k: large messages are striped over
 * them and a link that stops is carried through the others (backends/tcp/engine_lane.c, as for
 * the ring's K links). A pair sharing no cable (host names, routed networks) gets one link, to an
 * address of j in the subnet of one of i's addresses, else the first that answers. Messages then go
 * through the TCP engine (backends/tcp/engine.h). */
#include <stdio.h>

#include "backends/mesh/mesh.h"
#include "backends/tcp/engine.h"
#include "backends/tcp/world.h"
#include "core/params.h"
#include "core/transport.h"

static int mesh_configured(const tether__config *cfg, char *why, size_t why_len)
{
    if (cfg->hostfile || cfg->coordinator)
        return 1;
    snprintf(why, why_len, "%s and %s are unset", TETHER__VARS(HOSTFILE),
             TETHER__VARS(COORDINATOR));
    return 0;
}

/* Links between this rank and peer: one per cable the two share (tether__tcp_world_cables: an
 * address of each on one subnet, or both on loopback), at least one (host names, routed networks).
 * Both ends count alike; should they not, the handshake fails naming both counts. */
static int cables_between(const tether__config *cfg, const tether__tcp_world *w, int peer)
{
    int k = tether__tcp_world_cables(cfg, w, peer, NULL);
    return k > 1 ? k : k < 0 ? k : 1;
}

/* Lower rank connects, higher accepts: one link per cable of the pair, link k pinned to cable k
 * where there are several (backends/tcp/engine_lane.c then carries a link that dies through the
 * others). */
static int plan_links(const tether__config *cfg, tether__tcp_world *w)
{
    for (int p = 0; p < w->size; p++) {
        if (p == w->rank)
            continue;
        int k = cables_between(cfg, w, p);
        if (k < 0)
            return k;
        w->plan.out_links[p] = p > w->rank ? k : 0;
        w->plan.in_links[p] = p < w->rank ? k : 0;
        TRY(tether__tcp_world_addrs(cfg, w, p, k));
        if (k > 1)
            TLOG_INFO("mesh: %d links with rank %d, one per cable", k, p);
    }
    return TETHER_OK;
}

static int mesh_open(const tether__config *cfg, tether__ep **out, int *rank, int *size)
{
    tether__tcp_world w;
    tether__tcp_ep *ep = NULL;
    int rc;
    TRY_GOTO(rc, tether__tcp_world_locate(cfg, 1, &w), done);
    TRY_GOTO(rc, plan_links(cfg, &w), done);
    TRY_GOTO(rc, tether__tcp_world_connect(&w, "mesh", &ep), done);
    *out = (tether__ep *)ep;
    *rank = w.rank;
    *size = w.size;
done:
    tether__tcp_world_free(&w);
    return rc;
}

static void mesh_close(tether__ep *ep)
{
    tether__tcp_close((tether__tcp_ep *)ep);
}

const tether__transport_ops tether__mesh_ops = {
    .name = "mesh",
    .configured = mesh_configured,
    .usable = NULL,
    .open = mesh_open,
    .caps = tether__tcp_caps,
    TETHER__TCP_MESSAGE_OPS,
    .close = mesh_close,
};
