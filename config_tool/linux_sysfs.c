/* config_tool/linux_sysfs.c - reading a Linux host: thunderbolt-net interfaces from sysfs (as the
 * probe printed them), and `ip` addresses and routes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tool/config_tool.h"
#include "config_tool/linux_sysfs.h"
#include "config_tool/probe_fields.h"
#include "tools/netcmd_text.h"

#define CT_LINE_MAX 512

/* "4: eth0    inet 192.0.2.2/24 brd ... scope global eth0" */
static int parse_addrs(ct_host *h, const ct_section *sec)
{
    char line[CT_LINE_MAX], ifname[CT_IF_MAX], a[64];
    size_t pos = 0;
    uint32_t addr;
    int bits;

    while (tether__next_line(sec->text, sec->len, &pos, line, sizeof line))
        if (sscanf(line, "%*d: %31s inet %63[0-9.]/%d", ifname, a, &bits) == 3 &&
            ct_parse_ipv4(a, &addr) == 0 &&
            ct_add_net(h->addrs, &h->naddrs, CT_MAX_ADDRS, ifname, addr, ct_prefix_mask(bits)) !=
                0) {
            snprintf(h->error, sizeof h->error,
                     "ip addr: more IPv4 addresses than tether config "
                     "keeps (%d)",
                     CT_MAX_ADDRS);
            return -1;
        }
    return 0;
}

/* "192.0.2.0/24 dev eth0 ...", "10.9.9.9 via ... dev eth1" (a host route), "default ... dev X".
 * Returns the default route's interface in def. */
static int parse_routes(ct_host *h, const ct_section *sec, char *def, size_t deflen)
{
    char line[CT_LINE_MAX], dst[64], ifname[CT_IF_MAX], *dev;
    size_t pos = 0;
    uint32_t addr;
    int bits;

    while (tether__next_line(sec->text, sec->len, &pos, line, sizeof line)) {
        if (sscanf(line, "%63s", dst) != 1)
            continue;
        dev = strstr(line, " dev ");
        if (strcmp(dst, "default") == 0) {
            if (dev)
                snprintf(def, deflen, "%.*s", (int)strcspn(dev + 5, " "), dev + 5);
            continue;
        }
        bits = strchr(dst, '/') ? atoi(strchr(dst, '/') + 1) : 32;
        dst[strcspn(dst, "/")] = '\0';
        snprintf(ifname, sizeof ifname, "%.*s", dev ? (int)strcspn(dev + 5, " ") : 0,
                 dev ? dev + 5 : "");
        if (ct_parse_ipv4(dst, &addr) == 0 && ct_add_net(h->routes, &h->nroutes, CT_MAX_ROUTES,
                                                         ifname, addr, ct_prefix_mask(bits)) != 0) {
            snprintf(h->error, sizeof h->error,
                     "ip route: more routes than tether config keeps "
                     "(%d)",
                     CT_MAX_ROUTES);
            return -1;
        }
    }
    return 0;
}

/* Per lane speed times lanes ("20.0 Gb/s" x 2 = 40); one lane when the count is missing. */
static double link_gbps(const char *speed, const char *lanes)
{
    int n = atoi(lanes);

    return ct_parse_gbps(speed) * (n > 0 ? n : 1);
}

/* One "@@tether tbnet IF" section: key=value lines the probe read under sysfs. */
static int parse_tbnet(ct_host *h, const ct_section *sec)
{
    char line[CT_LINE_MAX], v[8][CT_UUID_MAX] = {{0}};
    static const char *const keys[8] = {"local",    "remote",   "rx_speed", "rx_lanes",
                                        "tx_speed", "tx_lanes", "mtu",      "operstate"};
    size_t pos = 0;
    ct_port *p;
    ct_iface *f;
    double rx, tx;

    while (tether__next_line(sec->text, sec->len, &pos, line, sizeof line))
        for (int k = 0; k < 8; k++)
            if (strncmp(line, keys[k], strlen(keys[k])) == 0 && line[strlen(keys[k])] == '=')
                snprintf(v[k], sizeof v[k], "%.*s", CT_UUID_MAX - 1, line + strlen(keys[k]) + 1);
    if (!v[0][0] || !v[1][0]) {
        snprintf(h->error, sizeof h->error,
                 "%s: no Thunderbolt unique_id for the %s end under "
                 "sysfs (is the thunderbolt module loaded?)",
                 sec->arg, v[0][0] ? "remote" : "local");
        return -1;
    }
    if (h->nports == CT_MAX_PORTS || !(f = ct_iface_get(h, sec->arg)))
        return 0;
    p = &h->ports[h->nports++];
    memset(p, 0, sizeof *p);
    snprintf(p->uuid, sizeof p->uuid, "%s", v[0]);
    snprintf(p->peers[p->npeers++], CT_UUID_MAX, "%s", v[1]);
    snprintf(p->iface, sizeof p->iface, "%s", sec->arg);
    rx = link_gbps(v[2], v[3]);
    tx = link_gbps(v[4], v[5]);
    p->gbps = rx < tx ? rx : tx;
    if (p->gbps > 0)
        snprintf(p->speed, sizeof p->speed, "%g Gb/s", p->gbps);
    f->mtu = atoi(v[6]);
    f->up = strcmp(v[7], "up") == 0;
    return 0;
}

static int is_port_iface(const ct_host *h, const char *name)
{
    for (int p = 0; p < h->nports; p++)
        if (strcmp(h->ports[p].iface, name) == 0)
            return 1;
    return 0;
}

/* The LAN address: on the default route's interface, else the first that is neither loopback
 * nor a Thunderbolt link. */
static void pick_lan_ip(ct_host *h, const char *def)
{
    for (int pass = 0; pass < 2 && !h->lan_ip[0]; pass++)
        for (int i = 0; i < h->naddrs && !h->lan_ip[0]; i++) {
            const ct_net *a = &h->addrs[i];
            int other = (a->addr >> 24) != 127 && !is_port_iface(h, a->iface);
            if (pass == 0 ? strcmp(a->iface, def) == 0 : other)
                ct_format_ipv4(a->addr, h->lan_ip, sizeof h->lan_ip);
        }
}

int ct_parse_linux(ct_host *h, const ct_section *secs, int nsecs)
{
    const ct_section *ver = ct_section_find(secs, nsecs, "version");
    const ct_section *addrs = ct_section_find(secs, nsecs, "ipaddr");
    const ct_section *routes = ct_section_find(secs, nsecs, "iproute");
    char def[CT_IF_MAX] = "";

    h->os = CT_OS_LINUX;
    if (ver)
        snprintf(h->os_version, sizeof h->os_version, "%.*s", (int)strcspn(ver->text, "\n"),
                 ver->text);
    if (!addrs || !routes) {
        snprintf(h->error, sizeof h->error, "probe output lacks the ip addr or ip route part");
        return -1;
    }
    if (parse_addrs(h, addrs) < 0 || parse_routes(h, routes, def, sizeof def) < 0)
        return -1;
    for (int i = 0; i < nsecs; i++)
        if (strcmp(secs[i].name, "tbnet") == 0 && parse_tbnet(h, &secs[i]) < 0)
            return -1;
    pick_lan_ip(h, def);
    return 0;
}
