/* config_tool/results.c - what `tether config` hands back: the launcher hostfile in rank order,
 * a Graphviz graph of the cables, and the plain summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tool/config_say.h"
#include "config_tool/config_tool.h"
#include "config_tool/host_setup.h"
#include "config_tool/probe_fields.h"
#include "config_tool/results.h"
#include "config_tool/topology.h"
#include "hostfile/hostfile.h"

int ct_rank_order(const ct_run *run, int *order)
{
    int ring = run->backend == CT_BACKEND_RING ||
               (run->backend == CT_BACKEND_RDMA && !run->topo.full_mesh);

    for (int i = 0; i < run->nhosts; i++)
        order[i] = ring && !run->opt.ethernet ? run->topo.ring[i] : i;
    return run->nhosts;
}

/* The address host h holds on cable c, if h is one of its ends and the cable is used. */
static int cable_addr(const ct_run *run, int c, int h, char *buf, size_t len)
{
    const ct_cable *cb = &run->topo.cables[c];

    for (int k = 0; k < 2; k++)
        if (run->plan[c].used && cb->host[k] == h) {
            ct_format_ipv4(run->plan[c].addr[k], buf, len);
            return 1;
        }
    return 0;
}

static int joins(const ct_cable *cb, int a, int b)
{
    return (cb->host[0] == a && cb->host[1] == b) || (cb->host[0] == b && cb->host[1] == a);
}

/* ips of host h: ring - its addresses on the cables to its left neighbour (MLX's ring connects
 * to the right and accepts from the left); mesh - every cable address; rdma and ethernet - the
 * LAN address, which every host reaches (MLX puts the coordinator's there). */
static int fill_ips(const ct_run *run, int h, int left, tether__launch_host *out)
{
    char addr[16];

    if (run->opt.ethernet || run->backend == CT_BACKEND_RDMA) {
        if (!run->hosts[h].lan_ip[0])
            return 0;
        out->ips = calloc(1, sizeof *out->ips);
        if (!out->ips)
            return -1;
        snprintf(out->ips[out->nips++], TETHER__HOST_MAX, "%s", run->hosts[h].lan_ip);
        return 0;
    }
    out->ips = calloc((size_t)run->topo.ncables + 1, sizeof *out->ips);
    if (!out->ips)
        return -1;
    for (int c = 0; c < run->topo.ncables; c++)
        if ((run->backend != CT_BACKEND_RING || joins(&run->topo.cables[c], h, left)) &&
            cable_addr(run, c, h, addr, sizeof addr))
            snprintf(out->ips[out->nips++], TETHER__HOST_MAX, "%s", addr);
    return 0;
}

/* rdma[j]: the devices of every used cable from h to the host of rank j (none on the diagonal
 * or without a cable). */
static int fill_rdma(const ct_run *run, int h, const int *order, tether__launch_host *out)
{
    int n = run->nhosts;

    out->rdma = calloc((size_t)n, sizeof *out->rdma);
    out->rdma_devs = calloc((size_t)n, sizeof *out->rdma_devs);
    if (!out->rdma || !out->rdma_devs)
        return -1;
    out->nrdma = n;
    for (int j = 0; j < n; j++) {
        int m = 0;
        if (!(out->rdma_devs[j] = calloc((size_t)run->topo.ncables + 1, sizeof(char *))))
            return -1;
        for (int c = 0; c < run->topo.ncables; c++) {
            const ct_cable *cb = &run->topo.cables[c];
            char dev[CT_IF_MAX + 8];
            if (!run->plan[c].used || !joins(cb, h, order[j]) || order[j] == h)
                continue;
            snprintf(dev, sizeof dev, "rdma_%s",
                     run->hosts[h].ports[cb->port[cb->host[0] == h ? 0 : 1]].iface);
            if (!(out->rdma_devs[j][m++] = strdup(dev)))
                return -1;
        }
        out->rdma[j] = out->rdma_devs[j][0];
    }
    return 0;
}

static int fill_host(const ct_run *run, const int *order, int i, tether__launch_host *out)
{
    int n = run->nhosts, h = order[i];

    snprintf(out->ssh, sizeof out->ssh, "%s", run->hosts[h].name);
    if (fill_ips(run, h, order[(i + n - 1) % n], out) < 0)
        return -1;
    return run->backend == CT_BACKEND_RDMA ? fill_rdma(run, h, order, out) : 0;
}

int ct_build_hostfile(const ct_run *run, tether__launch_hosts *out)
{
    int order[CT_MAX_HOSTS];

    memset(out, 0, sizeof *out);
    snprintf(out->backend, sizeof out->backend, "%s", ct_hostfile_backend(run));
    out->hosts = calloc((size_t)run->nhosts, sizeof *out->hosts);
    out->envs = calloc((size_t)run->opt.nenvs + 1, sizeof *out->envs);
    if (!out->hosts || !out->envs)
        goto oom;
    for (int i = 0; i < run->opt.nenvs; i++, out->nenvs++)
        if (!(out->envs[i] = strdup(run->opt.envs[i])))
            goto oom;
    ct_rank_order(run, order);
    out->nhosts = run->nhosts;
    for (int i = 0; i < run->nhosts; i++)
        if (fill_host(run, order, i, &out->hosts[i]) < 0)
            goto oom;
    return 0;
oom:
    ct_say("out of memory building the hostfile");
    tether__launch_hosts_free(out);
    return -1;
}

static void speed_text(double gbps, char *buf, size_t len)
{
    if (gbps > 0)
        snprintf(buf, len, "%g Gb/s", gbps);
    else
        snprintf(buf, len, "speed unknown");
}

void ct_print_dot(const ct_run *run)
{
    printf("graph tether {\n  node [shape=box];\n");
    for (int h = 0; h < run->nhosts; h++)
        printf("  \"%s\";\n", run->hosts[h].name);
    for (int c = 0; c < run->topo.ncables; c++) {
        const ct_cable *cb = &run->topo.cables[c];
        const ct_port *a = &run->hosts[cb->host[0]].ports[cb->port[0]];
        const ct_port *b = &run->hosts[cb->host[1]].ports[cb->port[1]];
        char speed[32];
        speed_text(cb->gbps, speed, sizeof speed);
        printf("  \"%s\" -- \"%s\" [label=\"%s - %s\\n%s\"];\n", run->hosts[cb->host[0]].name,
               run->hosts[cb->host[1]].name, a->iface[0] ? a->iface : "?",
               b->iface[0] ? b->iface : "?", speed);
    }
    printf("}\n");
}

static const char *os_name(ct_os os)
{
    return os == CT_OS_MACOS ? "macOS" : os == CT_OS_LINUX ? "Linux" : "?";
}

static void print_hosts(const ct_run *run, int w)
{
    int vw = 7;

    for (int h = 0; h < run->nhosts; h++)
        if ((int)strlen(run->hosts[h].os_version) > vw)
            vw = (int)strlen(run->hosts[h].os_version);
    printf("hosts:\n  %-*s  %-6s %-*s %-10s %-6s %s\n", w, "host", "os", vw, "version", "model",
           "ports", "rdma");
    for (int h = 0; h < run->nhosts; h++) {
        const ct_host *x = &run->hosts[h];
        printf("  %-*s  %-6s %-*s %-10s %-6d %s\n", w, x->name, os_name(x->os), vw, x->os_version,
               x->model[0] ? x->model : "-", x->nports,
               x->os != CT_OS_MACOS ? "-"
               : x->rdma_enabled    ? "enabled"
                                    : "disabled");
    }
}

static void print_cables(const ct_run *run, int w)
{
    printf("cables: %d\n", run->topo.ncables);
    for (int c = 0; c < run->topo.ncables; c++) {
        const ct_cable *cb = &run->topo.cables[c];
        const ct_cable_addr *p = &run->plan[c];
        char addr[2][16] = {"", ""}, speed[32];
        for (int k = 0; k < 2; k++) {
            const ct_host *x = &run->hosts[cb->host[k]];
            const char *iface = x->ports[cb->port[k]].iface;
            printf("%s%-*s %-12s", k ? " <-> " : "  ", w, x->name, iface[0] ? iface : "?");
            if (p->net)
                ct_format_ipv4(p->addr[k], addr[k], sizeof addr[k]);
        }
        speed_text(cb->gbps, speed, sizeof speed);
        if (p->net)
            printf(" %-10s %s <-> %s%s\n", speed, addr[0], addr[1],
                   p->reused ? " (already set)" : "");
        else if (run->backend != CT_BACKEND_ANY && !p->used)
            printf(" %-10s (not used by the %s)\n", speed, ct_backend_name(run->backend));
        else
            printf(" %s\n", speed);
    }
}

void ct_print_commands(const ct_run *run)
{
    char cmds[8192];
    int total = 0;

    printf("setup commands (run as root on each host, or pass --auto-setup):\n");
    for (int h = 0; h < run->nhosts; h++) {
        int n = ct_setup_commands(run, h, cmds, sizeof cmds);
        total += n;
        if (n == 0)
            continue;
        printf("  on %s:\n", run->hosts[h].name);
        for (const char *l = cmds; *l; l += *l == '\n') {
            int len = (int)strcspn(l, "\n");
            printf("    sudo %.*s\n", len, l);
            l += len;
        }
    }
    if (total == 0)
        printf("  none: every host is set up already\n");
}

void ct_print_summary(const ct_run *run, int with_commands)
{
    char ring[512];
    int w = 4;

    for (int h = 0; h < run->nhosts; h++)
        if ((int)strlen(run->hosts[h].name) > w)
            w = (int)strlen(run->hosts[h].name);
    print_hosts(run, w);
    if (!run->opt.ethernet) {
        print_cables(run, w);
        ct_ring_text(run, ring, sizeof ring);
        printf("topology: %s; ring: %s\n", run->topo.full_mesh ? "full mesh" : "not a full mesh",
               ring);
    }
    if (run->backend != CT_BACKEND_ANY)
        printf("backend: %s\n", run->backend_why);
    if (with_commands && !run->opt.ethernet)
        ct_print_commands(run);
}
