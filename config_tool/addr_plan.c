/* config_tool/addr_plan.c - one /30 per used cable from the pool (--subnet; without it the default
 * pool, or the first fallback with room for every cable when the hosts' networks fill it),
 * avoiding every address and route already on any host, and keeping what a previous run set up
 * (so a second run changes nothing). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tool/addr_plan.h"
#include "config_tool/config_say.h"
#include "config_tool/config_tool.h"
#include "config_tool/probe_fields.h"

#define CT_BLOCK_MASK 0xfffffffcu /* /30: network, two hosts, broadcast */

int ct_parse_cidr(const char *s, uint32_t *net, uint32_t *mask)
{
    char addr[32];
    int bits, end = 0;

    if (sscanf(s, "%31[0-9.]/%d%n", addr, &bits, &end) != 2 || s[end] != '\0' || bits < 8 ||
        bits > 30 || ct_parse_ipv4(addr, net) != 0)
        return -1;
    *mask = ~0u << (32 - bits);
    return (*net & ~*mask) ? -1 : 0; /* host bits set: say what was meant */
}

static int overlaps(uint32_t a, uint32_t ma, uint32_t b, uint32_t mb)
{
    return ((a ^ b) & ma & mb) == 0;
}

/* Is iface on host h one end of a used cable? Its old addresses are replaced, so they do not
 * block the pool. */
static int cable_iface(const ct_run *run, int h, const char *iface)
{
    for (int c = 0; c < run->topo.ncables; c++)
        for (int k = 0; k < 2; k++) {
            const ct_cable *cb = &run->topo.cables[c];
            if (run->plan[c].used && cb->host[k] == h &&
                strcmp(run->hosts[h].ports[cb->port[k]].iface, iface) == 0)
                return 1;
        }
    return 0;
}

/* The network of host h (an address, or a route when route is set) that overlaps net/mask, or
 * NULL. A route wider than a /8 blocks nothing: it is the default route cut in halves or quarters
 * (VPNs route 0/1 and 128.0/1 to take all traffic), and like "default" itself leaves every range
 * to the more specific routes a cable adds. */
static const ct_net *blocker(const ct_run *run, int h, int route, uint32_t net, uint32_t mask)
{
    const ct_host *x = &run->hosts[h];
    const ct_net *nets = route ? x->routes : x->addrs;
    int n = route ? x->nroutes : x->naddrs;

    for (int i = 0; i < n; i++)
        if (!cable_iface(run, h, nets[i].iface) && (!route || ct_mask_bits(nets[i].mask) >= 8) &&
            overlaps(nets[i].addr, nets[i].mask, net, mask))
            return &nets[i];
    return NULL;
}

/* Free: no host has an address or route in it, and no cable has it already. */
static int block_free(const ct_run *run, uint32_t block, int upto)
{
    for (int h = 0; h < run->nhosts; h++)
        if (blocker(run, h, 0, block, CT_BLOCK_MASK) || blocker(run, h, 1, block, CT_BLOCK_MASK))
            return 0;
    for (int c = 0; c < upto; c++)
        if (run->plan[c].used && run->plan[c].net == block)
            return 0;
    return 1;
}

/* The /30 address iface holds inside one of the pools, or 0. */
static uint32_t held(const ct_run *run, int h, const char *iface)
{
    const ct_host *x = &run->hosts[h];

    for (int i = 0; i < x->naddrs; i++) {
        uint32_t a = x->addrs[i].addr;
        if (strcmp(x->addrs[i].iface, iface) != 0 || x->addrs[i].mask != CT_BLOCK_MASK ||
            (a & 3) == 0 || (a & 3) == 3)
            continue;
        for (int p = 0; p < run->opt.npools; p++)
            if ((a & run->opt.pools[p].mask) == run->opt.pools[p].net)
                return a;
    }
    return 0;
}

/* Both ends already hold two addresses of one /30 from the pools: keep them. */
static int try_reuse(ct_run *run, int c)
{
    const ct_cable *cb = &run->topo.cables[c];
    uint32_t a = held(run, cb->host[0], run->hosts[cb->host[0]].ports[cb->port[0]].iface);
    uint32_t b = held(run, cb->host[1], run->hosts[cb->host[1]].ports[cb->port[1]].iface);
    ct_cable_addr *p = &run->plan[c];

    if (!a || !b || a == b || (a & CT_BLOCK_MASK) != (b & CT_BLOCK_MASK) ||
        !block_free(run, a & CT_BLOCK_MASK, c))
        return 0;
    p->net = a & CT_BLOCK_MASK;
    p->addr[0] = a;
    p->addr[1] = b;
    p->reused = 1;
    return 1;
}

/* The first free /30 of pool for cable c. 0, or -1 when there is none. */
static int allocate(ct_run *run, int c, const ct_pool *pool)
{
    uint32_t size = ~pool->mask + 1u;
    ct_cable_addr *p = &run->plan[c];

    for (uint32_t off = 0; off < size; off += 4) {
        uint32_t block = pool->net + off;
        if (block_free(run, block, run->topo.ncables)) {
            p->net = block;
            p->addr[0] = block + 1;
            p->addr[1] = block + 2;
            return 0;
        }
    }
    return -1;
}

/* Every used cable not kept from an earlier run gets a /30 of pool. 0, or the number of the first
 * cable that got none; with retry, the blocks given are then taken back for the next pool. */
static int allocate_all(ct_run *run, const ct_pool *pool, int retry)
{
    for (int c = 0; c < run->topo.ncables; c++)
        if (run->plan[c].used && !run->plan[c].reused && allocate(run, c, pool) < 0) {
            for (int d = 0; d < c && retry; d++)
                if (!run->plan[d].reused)
                    run->plan[d].net = 0;
            return c + 1;
        }
    return 0;
}

static void pool_text(const ct_pool *pool, char *buf, size_t len)
{
    char net[16];

    ct_format_ipv4(pool->net, net, sizeof net);
    snprintf(buf, len, "%s/%d", net, ct_mask_bits(pool->mask));
}

/* Why pool is full: the hosts' networks in it (the first three), else the cables. */
static void why_full(const ct_run *run, const ct_pool *pool, char *buf, size_t len)
{
    size_t used = 0;
    int shown = 0;

    for (int h = 0; h < run->nhosts; h++)
        for (int route = 0; route < 2; route++) {
            const ct_host *x = &run->hosts[h];
            const ct_net *nets = route ? x->routes : x->addrs;
            int n = route ? x->nroutes : x->naddrs;
            for (int i = 0; i < n && shown < 3 && used < len; i++) {
                char a[16];
                if (cable_iface(run, h, nets[i].iface) ||
                    (route && ct_mask_bits(nets[i].mask) < 8) ||
                    !overlaps(nets[i].addr, nets[i].mask, pool->net, pool->mask))
                    continue;
                ct_format_ipv4(nets[i].addr, a, sizeof a);
                used += (size_t)snprintf(buf + used, len - used, "%s%s %s %s/%d %s %s",
                                         shown++ ? "; " : "", x->name, route ? "routes" : "has", a,
                                         ct_mask_bits(nets[i].mask), route ? "through" : "on",
                                         nets[i].iface[0] ? nets[i].iface : "no interface");
            }
        }
    if (!shown)
        snprintf(buf, len, "the cables take every /30 of it");
}

int ct_plan_addresses(ct_run *run)
{
    char pool[20], used[20], skipped[20], why[512];
    int failed = 0;

    /* Reuse first, so a kept block is not handed to an earlier cable. */
    for (int c = 0; c < run->topo.ncables; c++) {
        if (!run->plan[c].used || !try_reuse(run, c))
            run->plan[c].net = 0;
    }
    for (int p = 0; p < run->opt.npools; p++) {
        if (!(failed = allocate_all(run, &run->opt.pools[p], p + 1 < run->opt.npools))) {
            if (p > 0) {
                pool_text(&run->opt.pools[0], pool, sizeof pool);
                pool_text(&run->opt.pools[p], used, sizeof used);
                pool_text(&run->opt.pools[1], skipped, sizeof skipped);
                why_full(run, &run->opt.pools[0], why, sizeof why);
                ct_say("the default pool %s has no room for the cables (%s): they get addresses "
                       "from %s instead%s%s%s (--subnet chooses the pool)",
                       pool, why, used, p > 1 ? ", as " : "", p > 1 ? skipped : "",
                       p > 1 ? " has none either" : "");
            }
            return 0;
        }
    }
    pool_text(&run->opt.pools[0], pool, sizeof pool);
    if (run->opt.npools == 1) {
        ct_say("%s has no /30 left for cable %d of %d (blocks on a host's networks or given to "
               "another cable are skipped); pass --subnet with a larger or other range",
               pool, failed, run->topo.ncables);
    } else {
        ct_say("no /30 left for cable %d of %d in the default pool %s nor in %s or %s (blocks on "
               "a host's networks or given to another cable are skipped); pass --subnet with a "
               "range none of your networks uses",
               failed, run->topo.ncables, pool, CT_FALLBACK_POOL_1, CT_FALLBACK_POOL_2);
    }
    return -1;
}
