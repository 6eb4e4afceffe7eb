/* backends/tcp/world.c - the rank table, listeners and plan-to-engine steps the TCP backends share.
 */
#include "world.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/net/bootstrap.h"
#include "backends/net/token.h"
#include "core/params.h"

static int load_hostfile(const tether__config *cfg, tether__tcp_world *w)
{
    TRY(tether__hostfile_load_ranks(cfg->hostfile, &w->table));
    int n = w->table.nranks;
    if (cfg->rank < 0)
        return tether__fail(TETHER_ECONFIG, "%s is unset: with the hostfile %s it must be 0 to %d",
                            TETHER__VARS(RANK), cfg->hostfile, n - 1);
    if (cfg->rank >= n)
        return tether__fail(TETHER_ECONFIG,
                            "%s=%d is out of range: the hostfile %s lists %d ranks "
                            "(0 to %d)",
                            TETHER__VAR(RANK), cfg->rank, cfg->hostfile, n, n - 1);
    if (cfg->size >= 0 && cfg->size != n)
        return tether__fail(TETHER_ECONFIG,
                            "%s=%d disagrees with the hostfile %s, which lists %d "
                            "ranks",
                            TETHER__VAR(SIZE), cfg->size, cfg->hostfile, n);
    return TETHER_OK;
}

/* Listen on every address of this rank's entry, each allowed by TETHER_IFACE_PRIORITY. */
static int listen_all(const tether__config *cfg, tether__tcp_world *w)
{
    int n = w->table.naddrs[w->rank], port;
    w->listen_fds = malloc((size_t)n * sizeof *w->listen_fds);
    if (!w->listen_fds)
        return tether__fail(TETHER_ENOMEM, "out of memory for %d listeners", n);
    for (int i = 0; i < n; i++) {
        const tether__hostaddr *a = &w->table.addrs[w->rank][i];
        if (!tether__addr_allowed(cfg, a->host))
            return tether__fail(TETHER_ECONFIG,
                                "rank %d: address %s (entry %d of %s) does not match "
                                "%s: remove it or widen the prefixes",
                                w->rank, a->host, i, cfg->hostfile, TETHER__VAR(IFACE_PRIORITY));
        TRY(tether__net_listen(a->host, a->port, &w->listen_fds[i], &port));
        w->nlisten++;
    }
    return TETHER_OK;
}

static int locate(const tether__config *cfg, int allow_coordinator, tether__tcp_world *w)
{
    if (cfg->hostfile || !allow_coordinator) {
        TRY(load_hostfile(cfg, w));
        w->rank = cfg->rank;
        w->size = w->table.nranks;
        return listen_all(cfg, w);
    }
    if (!(w->listen_fds = malloc(sizeof *w->listen_fds)))
        return tether__fail(TETHER_ENOMEM, "out of memory for a listener");
    TRY(tether__net_bootstrap(cfg, &w->table, &w->listen_fds[0]));
    w->nlisten = 1;
    w->rank = cfg->rank;
    w->size = cfg->size;
    return TETHER_OK;
}

int tether__tcp_world_locate(const tether__config *cfg, int allow_coordinator, tether__tcp_world *w)
{
    memset(w, 0, sizeof *w);
    TRY(locate(cfg, allow_coordinator, w));
    TRY(tether__net_plan_init(&w->plan, w->rank, w->size, cfg));
    if (!cfg->job_token[0] && cfg->hostfile) {
        tether__net_token_from_table(&w->table, cfg->hostfile, w->token, sizeof w->token);
        w->plan.token = w->token;
    }
    w->plan.nlisten = w->nlisten;
    w->plan.listen_fds = w->listen_fds;
    return TETHER_OK;
}

int tether__tcp_on_cable(const char *own, const char *theirs)
{
    if (!strncmp(own, "127.", 4) && !strncmp(theirs, "127.", 4))
        return 1;
    return tether__net_same_subnet(own, theirs);
}

/* 1 if addr is on a cable to one of this rank's own addresses. */
static int near(const tether__tcp_world *w, const char *addr)
{
    for (int i = 0; i < w->table.naddrs[w->rank]; i++)
        if (tether__tcp_on_cable(w->table.addrs[w->rank][i].host, addr))
            return 1;
    return 0;
}

int tether__tcp_world_cables(const tether__config *cfg, const tether__tcp_world *w, int peer,
                             int *far)
{
    const tether__hostaddr *mine = w->table.addrs[w->rank], *theirs = w->table.addrs[peer];
    int nt = w->table.naddrs[peer], k = 0;
    unsigned char *used = calloc((size_t)(nt ? nt : 1), 1);
    if (!used)
        return tether__fail(TETHER_ENOMEM, "out of memory matching the cables to rank %d", peer);
    /* Each own address takes the first free address of the peer on its cable: where the cables
     * are subnets (each address on one), as where all are loopback, this pairs as many as can be,
     * so both ends count the same. */
    for (int i = 0; i < w->table.naddrs[w->rank]; i++)
        for (int j = 0; j < nt; j++)
            if (!used[j] && tether__addr_allowed(cfg, theirs[j].host) &&
                tether__tcp_on_cable(mine[i].host, theirs[j].host)) {
                used[j] = 1;
                if (far)
                    far[k] = j;
                k++;
                break;
            }
    free(used);
    return k;
}

int tether__tcp_world_addrs(const tether__config *cfg, tether__tcp_world *w, int peer, int cables)
{
    const tether__hostaddr *all = w->table.addrs[peer];
    if (cables > 1) { /* link k to the far end of cable k, and only there */
        int *far = malloc((size_t)cables * sizeof *far);
        if (!far)
            return tether__fail(TETHER_ENOMEM, "out of memory for the cables to rank %d", peer);
        int n = tether__tcp_world_cables(cfg, w, peer, far), rc = TETHER_OK;
        for (int k = 0; k < cables && k < n && rc == TETHER_OK; k++)
            rc = tether__net_plan_add_addr(&w->plan, peer, &all[far[k]]);
        free(far);
        return rc;
    }
    for (int pass = 0; pass < (cables ? 2 : 1); pass++)
        for (int i = 0; i < w->table.naddrs[peer]; i++)
            if (tether__addr_allowed(cfg, all[i].host) &&
                (!cables || near(w, all[i].host) == (pass == 0)))
                TRY(tether__net_plan_add_addr(&w->plan, peer, &all[i]));
    if (w->plan.naddrs[peer] == 0 && w->plan.out_links[peer] > 0)
        return tether__fail(TETHER_ECONFIG, "rank %d: no address of rank %d in %s matches %s",
                            w->rank, peer, cfg->hostfile ? cfg->hostfile : "the table",
                            TETHER__VAR(IFACE_PRIORITY));
    return TETHER_OK;
}

int tether__tcp_world_connect(tether__tcp_world *w, const char *backend, tether__tcp_ep **out)
{
    tether__net_links links = {0};
    w->plan.backend = backend;
    TRY(tether__net_setup(&w->plan, &links));
    int rc = tether__tcp_ep_create(&links, w->rank, backend, out);
    tether__net_links_free(&links);
    if (rc == TETHER_OK &&
        ((rc = tether__tcp_beat_start(*out, w->plan.heartbeat_ms)) < 0 ||
         (rc = tether__tcp_rejoin_start(*out, &w->plan, &w->nlisten, &w->listen_fds)) < 0)) {
        tether__tcp_abort((tether__ep *)*out, rc,
                          tether_last_error()); /* the peers formed their links */
        tether__tcp_close(*out);
        *out = NULL;
    }
    return rc;
}

void tether__tcp_world_free(tether__tcp_world *w)
{
    for (int i = 0; i < w->nlisten; i++)
        close(w->listen_fds[i]);
    free(w->listen_fds);
    tether__net_plan_free(&w->plan);
    tether__rank_hosts_free(&w->table);
}
