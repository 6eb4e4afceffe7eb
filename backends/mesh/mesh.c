/* backends/mesh/mesh.c - the full-mesh TCP backend: one link between every pair of ranks.
 *
 * The rank table comes from the per-rank hostfile (TETHER_HOSTFILE, MLX's format) or from the
 * coordinator bootstrap (TETHER_COORDINATOR). Rank r listens on every address of its entry; the
 * lower rank of each pair connects, the higher accepts. With several addresses per rank (one per
 * cable) rank i reaches rank j at an address of j in the subnet of one of i's addresses, else the
 * first that answers. Messages then go through the TCP engine (backends/tcp/engine.h). */
#include <stdio.h>

#include "backends/mesh/mesh.h"
#include "backends/tcp/engine.h"
#include "backends/tcp/world.h"
#include "core/transport.h"

static int mesh_configured(const tether_config *cfg, char *why, size_t why_len)
{
    if (cfg->hostfile || cfg->coordinator)
        return 1;
    snprintf(why, why_len, "TETHER_HOSTFILE and TETHER_COORDINATOR are unset");
    return 0;
}

/* Lower rank connects, higher accepts: one link per pair. */
static int plan_links(const tether_config *cfg, tether__tcp_world *w)
{
    for (int p = 0; p < w->size; p++) {
        w->plan.out_links[p] = p > w->rank;
        w->plan.in_links[p] = p < w->rank;
        if (p != w->rank)
            TRY(tether__tcp_world_addrs(cfg, w, p, 1));
    }
    return TETHER_OK;
}

static int mesh_open(const tether_config *cfg, tether_ep **out, int *rank, int *size)
{
    tether__tcp_world w;
    tether__tcp_ep *ep = NULL;
    int rc;
    TRY_GOTO(rc, tether__tcp_world_locate(cfg, 1, &w), done);
    TRY_GOTO(rc, plan_links(cfg, &w), done);
    TRY_GOTO(rc, tether__tcp_world_connect(&w, "mesh", &ep), done);
    *out = (tether_ep *)ep;
    *rank = w.rank;
    *size = w.size;
done:
    tether__tcp_world_free(&w);
    return rc;
}

static void mesh_close(tether_ep *ep)
{
    tether__tcp_close((tether__tcp_ep *)ep);
}

const tether_transport_ops tether_mesh_ops = {
    .name = "mesh",
    .configured = mesh_configured,
    .usable = NULL,
    .open = mesh_open,
    .caps = tether__tcp_caps,
    TETHER__TCP_MESSAGE_OPS,
    .close = mesh_close,
};
