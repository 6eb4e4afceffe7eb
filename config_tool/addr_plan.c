/* config_tool/addr_plan.c - one /30 per used cable from the pool, avoiding every network already
 * on any host, and keeping what a previous run set up (so a second run changes nothing). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tool/config_tool.h"

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

static int nets_block(const ct_run *run, int h, const ct_net *nets, int n, uint32_t block)
{
    for (int i = 0; i < n; i++)
        if (!cable_iface(run, h, nets[i].iface) &&
            overlaps(nets[i].addr, nets[i].mask, block, CT_BLOCK_MASK))
            return 1;
    return 0;
}

/* Free: no host has an address or route in it, and no cable has it already. */
static int block_free(const ct_run *run, uint32_t block, int upto)
{
    for (int h = 0; h < run->nhosts; h++)
        if (nets_block(run, h, run->hosts[h].addrs, run->hosts[h].naddrs, block) ||
            nets_block(run, h, run->hosts[h].routes, run->hosts[h].nroutes, block))
            return 0;
    for (int c = 0; c < upto; c++)
        if (run->plan[c].used && run->plan[c].net == block)
            return 0;
    return 1;
}

/* The /30 address iface holds inside the pool, or 0. */
static uint32_t held(const ct_run *run, int h, const char *iface)
{
    const ct_host *x = &run->hosts[h];

    for (int i = 0; i < x->naddrs; i++) {
        uint32_t a = x->addrs[i].addr;
        if (strcmp(x->addrs[i].iface, iface) == 0 && x->addrs[i].mask == CT_BLOCK_MASK &&
            (a & run->opt.pool_mask) == run->opt.pool_net && (a & 3) != 0 && (a & 3) != 3)
            return a;
    }
    return 0;
}

/* Both ends already hold two addresses of one /30 from the pool: keep them. */
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

static int allocate(ct_run *run, int c)
{
    uint32_t size = ~run->opt.pool_mask + 1u;
    ct_cable_addr *p = &run->plan[c];
    char pool[20];

    for (uint32_t off = 0; off < size; off += 4) {
        uint32_t block = run->opt.pool_net + off;
        if (block_free(run, block, run->topo.ncables)) {
            p->net = block;
            p->addr[0] = block + 1;
            p->addr[1] = block + 2;
            return 0;
        }
    }
    ct_format_ipv4(run->opt.pool_net, pool, sizeof pool);
    ct_say("%s/%d has no /30 left for cable %d of %d (blocks on a host's networks or given to "
           "another cable are skipped); pass --subnet with a larger or other range", pool,
           ct_mask_bits(run->opt.pool_mask), c + 1, run->topo.ncables);
    return -1;
}

int ct_plan_addresses(ct_run *run)
{
    /* Reuse first, so a kept block is not handed to an earlier cable. */
    for (int c = 0; c < run->topo.ncables; c++) {
        if (!run->plan[c].used || !try_reuse(run, c))
            run->plan[c].net = 0;
    }
    for (int c = 0; c < run->topo.ncables; c++)
        if (run->plan[c].used && !run->plan[c].reused && allocate(run, c) < 0)
            return -1;
    return 0;
}
