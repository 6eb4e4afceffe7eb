/* config_tool/topology.c - the cable multigraph, the full-mesh check, the ring search (a
 * Hamiltonian cycle, else the largest cycle) and the choice of backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tool/config_say.h"
#include "config_tool/config_tool.h"
#include "config_tool/topology.h"

#define CT_SEARCH_BUDGET 2000000L /* DFS steps; enough for every cluster of Macs anyone cables */
#define CT_TB5_GBPS 80.0          /* a Thunderbolt 5 link runs at 80 Gb/s or more */

static int sees(const ct_port *p, const char *uuid)
{
    for (int k = 0; k < p->npeers; k++)
        if (strcmp(p->peers[k], uuid) == 0)
            return 1;
    return 0;
}

static double slower(double a, double b)
{
    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

/* A cable joins port p of host h and port q of host k when each lists the other's domain. */
static void match_ports(ct_run *run, int h, int k)
{
    ct_topology *t = &run->topo;

    for (int p = 0; p < run->hosts[h].nports; p++)
        for (int q = 0; q < run->hosts[k].nports; q++) {
            const ct_port *a = &run->hosts[h].ports[p], *b = &run->hosts[k].ports[q];
            if (!sees(a, b->uuid) || !sees(b, a->uuid) || t->ncables == CT_MAX_CABLES)
                continue;
            t->cables[t->ncables++] = (ct_cable){{h, k}, {p, q}, slower(a->gbps, b->gbps)};
            t->links[h][k]++;
            t->links[k][h]++;
        }
}

typedef struct search {
    const ct_topology *t;
    int n, start;
    int path[CT_MAX_HOSTS], used[CT_MAX_HOSTS];
    long budget;
} search;

/* Extend path[0..len-1]; keep in t->ring the longest cycle back to start. Vertices below start
 * were tried as starts already, so each cycle is found once. Stops at a Hamiltonian cycle. */
static void extend(search *s, int len, ct_topology *best)
{
    int last = s->path[len - 1];

    if (--s->budget < 0 || best->ring_len == s->n)
        return;
    if (len > best->ring_len && (len == 1 || (len >= 2 && s->t->links[last][s->start]))) {
        memcpy(best->ring, s->path, sizeof(int) * (size_t)len);
        best->ring_len = len;
    }
    for (int v = s->start + 1; v < s->n; v++) {
        if (s->used[v] || !s->t->links[last][v])
            continue;
        s->used[v] = 1;
        s->path[len] = v;
        extend(s, len + 1, best);
        s->used[v] = 0;
    }
}

static void find_ring(ct_topology *t, int n)
{
    search s = {.t = t, .n = n, .budget = CT_SEARCH_BUDGET};

    t->ring_len = 0;
    for (s.start = 0; s.start < n && t->ring_len < n; s.start++) {
        memset(s.used, 0, sizeof s.used);
        s.used[s.start] = 1;
        s.path[0] = s.start;
        extend(&s, 1, t);
    }
}

void ct_topology_build(ct_run *run)
{
    ct_topology *t = &run->topo;

    memset(t, 0, sizeof *t);
    for (int h = 0; h < run->nhosts; h++)
        for (int k = h + 1; k < run->nhosts; k++)
            match_ports(run, h, k);
    t->full_mesh = 1;
    for (int h = 0; h < run->nhosts; h++)
        for (int k = h + 1; k < run->nhosts; k++)
            if (!t->links[h][k])
                t->full_mesh = 0;
    find_ring(t, run->nhosts);
}

const char *ct_backend_name(ct_backend b)
{
    switch (b) {
    case CT_BACKEND_ANY:
        return "auto";
    case CT_BACKEND_RING:
        return "ring";
    case CT_BACKEND_MESH:
        return "mesh";
    case CT_BACKEND_RDMA:
        return "rdma";
    }
    return "?";
}

const char *ct_hostfile_backend(const ct_run *run)
{
    if (run->opt.format == CT_FORMAT_TETHER)
        return ct_backend_name(run->backend);
    switch (run->backend) {
    case CT_BACKEND_RDMA:
        return run->topo.full_mesh ? "jaccl" : "jaccl-ring";
    default:
        return ct_backend_name(run->backend);
    }
}

/* Does cable c lie on the ring (between neighbours)? */
static int on_ring(const ct_topology *t, const ct_cable *c, int n)
{
    for (int i = 0; i < t->ring_len; i++) {
        int a = t->ring[i], b = t->ring[(i + 1) % t->ring_len];
        if (n > 1 && ((c->host[0] == a && c->host[1] == b) || (c->host[0] == b && c->host[1] == a)))
            return 1;
    }
    return 0;
}

static void mark_used(ct_run *run, int ring)
{
    for (int c = 0; c < run->topo.ncables; c++)
        run->plan[c].used = !ring || on_ring(&run->topo, &run->topo.cables[c], run->nhosts);
}

static int has_dev(const ct_host *h, const char *iface)
{
    char want[CT_IF_MAX + 8];

    snprintf(want, sizeof want, "rdma_%s", iface);
    for (int i = 0; i < h->nrdma_devs; i++)
        if (strcmp(h->rdma_devs[i], want) == 0)
            return 1;
    return 0;
}

/* Why RDMA cannot run on the used cables ("" when it can): the first reason found. macOS 26.2
 * brought RDMA over Thunderbolt 5; Thunderbolt 4 links are named as such, not as misconfigured. */
static void rdma_blocker(const ct_run *run, char *why, size_t len)
{
    why[0] = '\0';
    for (int h = 0; h < run->nhosts && !why[0]; h++) {
        const ct_host *x = &run->hosts[h];
        if (x->os != CT_OS_MACOS)
            snprintf(why, len, "%s runs Linux, which has no RDMA over Thunderbolt", x->name);
        else if (!x->rdma_enabled)
            snprintf(why, len,
                     "%s: rdma_ctl does not report RDMA enabled (run `rdma_ctl enable` "
                     "in macOS recovery, macOS 26.2 or later)",
                     x->name);
    }
    for (int c = 0; c < run->topo.ncables && !why[0]; c++) {
        const ct_cable *cb = &run->topo.cables[c];
        const ct_host *a = &run->hosts[cb->host[0]], *b = &run->hosts[cb->host[1]];
        const ct_port *pa = &a->ports[cb->port[0]], *pb = &b->ports[cb->port[1]];
        if (!run->plan[c].used)
            continue;
        if (cb->gbps < CT_TB5_GBPS)
            snprintf(why, len,
                     "the cable %s %s - %s %s runs at %g Gb/s, a Thunderbolt 4 (or "
                     "older) link; RDMA needs Thunderbolt 5 at both ends",
                     a->name, pa->iface, b->name, pb->iface, cb->gbps);
        else if (!has_dev(a, pa->iface) || !has_dev(b, pb->iface))
            snprintf(why, len, "ibv_devices on %s lists no rdma_%s",
                     has_dev(a, pa->iface) ? b->name : a->name,
                     has_dev(a, pa->iface) ? pb->iface : pa->iface);
    }
}

/* The hosts missing a cable, for the message when a mesh is wanted. */
static void missing_pairs(const ct_run *run, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int h = 0; h < run->nhosts; h++)
        for (int k = h + 1; k < run->nhosts; k++)
            if (!run->topo.links[h][k] && used < len)
                used += (size_t)snprintf(buf + used, len - used, "%s%s - %s", used ? ", " : "",
                                         run->hosts[h].name, run->hosts[k].name);
}

void ct_ring_text(const ct_run *run, char *buf, size_t len)
{
    const ct_topology *t = &run->topo;
    size_t used = 0;

    if (t->ring_len < 2) {
        snprintf(buf, len, "none");
        return;
    }
    buf[0] = '\0';
    for (int i = 0; i <= t->ring_len && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " -> " : "",
                                 run->hosts[t->ring[i % t->ring_len]].name);
    if (used < len)
        snprintf(buf + used, len - used, " (%d of %d hosts)", t->ring_len, run->nhosts);
}

static int choose_ethernet(ct_run *run)
{
    if (run->opt.backend == CT_BACKEND_RDMA) {
        ct_say("--backend rdma needs --over thunderbolt: RDMA runs over Thunderbolt 5 cables");
        return -1;
    }
    for (int h = 0; h < run->nhosts; h++)
        if (!run->hosts[h].lan_ip[0]) {
            ct_say("%s: no IPv4 address on its LAN interface to put in the hostfile",
                   run->hosts[h].name);
            return -1;
        }
    run->backend = run->opt.backend == CT_BACKEND_RING ? CT_BACKEND_RING : CT_BACKEND_MESH;
    snprintf(run->backend_why, sizeof run->backend_why,
             "%s over ethernet: every host reaches "
             "every other through the LAN",
             ct_backend_name(run->backend));
    return 0;
}

int ct_backend_choose(ct_run *run)
{
    const ct_topology *t = &run->topo;
    int ring = t->ring_len == run->nhosts && run->nhosts > 1;
    int mesh = t->full_mesh && run->nhosts > 1;
    ct_backend want = run->opt.backend;
    char why[400], missing[400];

    if (run->opt.ethernet)
        return choose_ethernet(run);
    if (t->ncables == 0) {
        ct_say("no Thunderbolt cable found between the hosts (macOS: system_profiler lists no "
               "peer Mac; Linux: no thunderbolt-net interface); check the cables, or use "
               "--over ethernet");
        return -1;
    }
    mark_used(run, !mesh);
    rdma_blocker(run, why, sizeof why);
    missing_pairs(run, missing, sizeof missing);
    if (want == CT_BACKEND_RDMA && why[0]) {
        ct_say("--backend rdma: %s", why);
        return -1;
    }
    if ((want == CT_BACKEND_ANY || want == CT_BACKEND_RDMA) && !why[0] && (mesh || ring)) {
        run->backend = CT_BACKEND_RDMA;
        snprintf(run->backend_why, sizeof run->backend_why,
                 "rdma: every host has Thunderbolt 5 "
                 "RDMA and the cables form a %s",
                 mesh ? "full mesh" : "ring");
        return 0;
    }
    if ((want == CT_BACKEND_ANY || want == CT_BACKEND_MESH) && mesh) {
        run->backend = CT_BACKEND_MESH;
        snprintf(run->backend_why, sizeof run->backend_why,
                 "mesh: every pair of hosts has a "
                 "cable%s%s",
                 want == CT_BACKEND_ANY ? "; not rdma: " : "", want == CT_BACKEND_ANY ? why : "");
        return 0;
    }
    if ((want == CT_BACKEND_ANY || want == CT_BACKEND_RING) && ring) {
        mark_used(run, 1);
        run->backend = CT_BACKEND_RING;
        snprintf(run->backend_why, sizeof run->backend_why, "ring: the cables form a ring%s%s",
                 mesh ? "" : "; not a full mesh, missing ", mesh ? "" : missing);
        return 0;
    }
    ct_ring_text(run, why, sizeof why);
    if (want == CT_BACKEND_MESH)
        ct_say("--backend mesh: not a full mesh; no cable between %s", missing);
    else
        ct_say("the cables form neither a full mesh nor a ring through all %d hosts (no cable "
               "between %s); the largest ring found is %s",
               run->nhosts, missing, why);
    return -1;
}
