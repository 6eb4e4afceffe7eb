/* config_tool/macos.c - reading a macOS host: system_profiler's Thunderbolt tree, hardware ports,
 * ifconfig, the routing table (netstat), ibv_devices and rdma_ctl. */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tool/config_tool.h"
#include "config_tool/macos.h"
#include "config_tool/probe_fields.h"
#include "tools/netcmd_text.h"

#define CT_LINE_MAX 512

static int fail(ct_host *h, const char *what)
{
    snprintf(h->error, sizeof h->error, "%s", what);
    return -1;
}

/* Every Mac behind this item, at any depth: hubs and docks nest their devices in "_items".
 * Items without a domain UUID (drives, docks, displays) are devices, never hosts. */
static void collect_peers(const json_t *items, ct_port *p)
{
    size_t i;
    const json_t *it;

    json_array_foreach(items, i, it) {
        const char *uuid = json_string_value(json_object_get(it, "domain_uuid_key"));
        if (uuid && p->npeers < CT_MAX_PEERS)
            snprintf(p->peers[p->npeers++], CT_UUID_MAX, "%s", uuid);
        collect_peers(json_object_get(it, "_items"), p);
    }
}

/* The port's own receptacle: the "receptacle_N_tag" object that has an id. */
static void read_receptacle(const json_t *bus, ct_port *p)
{
    const char *key;
    const json_t *val;

    json_object_foreach((json_t *)bus, key, val) {
        const char *id = json_string_value(json_object_get(val, "receptacle_id_key"));
        const char *speed = json_string_value(json_object_get(val, "current_speed_key"));
        if (strncmp(key, "receptacle_", 11) != 0 || !id)
            continue;
        p->receptacle = atoi(id);
        snprintf(p->speed, sizeof p->speed, "%s", speed ? speed : "");
        p->gbps = speed ? ct_parse_gbps(speed) : 0;
    }
}

static int parse_thunderbolt(ct_host *h, const ct_section *sec)
{
    json_error_t err;
    json_t *root = json_loads(sec->text, 0, &err), *buses;
    size_t i;
    const json_t *bus;

    if (!root) {
        snprintf(h->error, sizeof h->error,
                 "system_profiler SPThunderboltDataType -json: invalid "
                 "JSON at line %d, column %d: %s",
                 err.line, err.column, err.text);
        return -1;
    }
    buses = json_object_get(root, "SPThunderboltDataType");
    if (!json_is_array(buses)) {
        json_decref(root);
        return fail(h, "system_profiler SPThunderboltDataType -json: no \"SPThunderboltDataType\" "
                       "list");
    }
    json_array_foreach(buses, i, bus) {
        const char *uuid = json_string_value(json_object_get(bus, "domain_uuid_key"));
        ct_port *p;
        if (!uuid || h->nports == CT_MAX_PORTS)
            continue;
        p = &h->ports[h->nports++];
        memset(p, 0, sizeof *p);
        snprintf(p->uuid, sizeof p->uuid, "%s", uuid);
        read_receptacle(bus, p);
        collect_peers(json_object_get(bus, "_items"), p);
    }
    json_decref(root);
    return 0;
}

/* networksetup -listallhardwareports names every interface, and gives each Thunderbolt receptacle
 * its interface. */
static void parse_ports(ct_host *h, const ct_section *sec)
{
    tether__hwport port;
    size_t pos = 0;

    while (tether__hwport_next(sec->text, sec->len, &pos, &port)) {
        ct_iface *f = ct_iface_get(h, port.device);
        if (!f)
            continue;
        snprintf(f->hwport, sizeof f->hwport, "%s", port.name);
        for (int p = 0; p < h->nports && port.receptacle > 0; p++)
            if (h->ports[p].receptacle == port.receptacle)
                snprintf(h->ports[p].iface, CT_IF_MAX, "%s", f->name);
    }
}

/* ifconfig: each interface's flags and mtu, its IPv4 addresses, and the members of bridges. */
static int parse_ifconfig(ct_host *h, const ct_section *sec)
{
    tether__ifc_line l = {0};
    size_t pos = 0;

    while (tether__ifconfig_next(sec->text, sec->len, &pos, &l)) {
        ct_iface *f = ct_iface_get(h, l.kind == TETHER__IFC_MEMBER ? l.member : l.iface);
        if (l.kind == TETHER__IFC_INET &&
            ct_add_net(h->addrs, &h->naddrs, CT_MAX_ADDRS, l.iface, l.addr, l.mask) != 0)
            return fail(h, "ifconfig: more IPv4 addresses than tether config keeps (64)");
        if (!f)
            continue;
        if (l.kind == TETHER__IFC_IFACE) {
            f->up = l.up;
            f->mtu = l.mtu;
        } else if (l.kind == TETHER__IFC_MEMBER) {
            snprintf(f->bridge, sizeof f->bridge, "%s", l.iface);
        }
    }
    return 0;
}

/* One field (0-based) of a line split at blanks, "" when it has fewer. */
static void field(const char *line, int n, char *buf, size_t len)
{
    for (int i = 0;; i++) {
        size_t w;
        line += strspn(line, " \t");
        w = strcspn(line, " \t");
        if (i == n || !w) {
            snprintf(buf, len, "%.*s", (int)w, line);
            return;
        }
        line += w;
    }
}

int ct_parse_bsd_dest(const char *s, int host, uint32_t *net, uint32_t *mask)
{
    uint32_t addr = 0, m;
    int octets = 0;
    char *end;

    for (;;) {
        unsigned long v;
        if (!isdigit((unsigned char)*s) || octets == 4)
            return -1;
        v = strtoul(s, &end, 10);
        if (v > 255 || end - s > 3)
            return -1;
        addr |= (uint32_t)v << (24 - 8 * octets++);
        s = end;
        if (*s != '.')
            break;
        s++;
    }
    if (*s == '/') {
        long bits = strtol(s + 1, &end, 10);
        if (!isdigit((unsigned char)s[1]) || bits > 32 || *end)
            return -1;
        m = ct_prefix_mask((int)bits);
    } else if (strncmp(s, "&0x", 3) == 0 && isxdigit((unsigned char)s[3])) {
        m = (uint32_t)strtoul(s + 3, &end, 16); /* a non-contiguous mask */
        if (*end)
            return -1;
    } else if (*s) {
        return -1;
    } else if (host || octets == 4) {
        m = 0xffffffffu;
    } else {
        m = addr < 0x80000000u ? 0xff000000u : addr < 0xc0000000u ? 0xffff0000u : 0xffffff00u;
        if (addr & ~m) /* "10.8": more octets than its class: they count */
            m = ct_prefix_mask(8 * octets);
    }
    if (addr & ~m)
        return -1;
    *net = addr;
    *mask = m;
    return 0;
}

/* netstat -rn -f inet: "Destination Gateway Flags Netif Expire" (macOS 11.3 on; before it, Refs
 * and Use came between Flags and Netif: the header says where each column is). The default route
 * is left out, as on Linux; so are routes cloned from another (flag W: ARP entries and the like,
 * inside the route they came from), which would only fill the table. */
static int parse_netstat(ct_host *h, const ct_section *sec)
{
    char line[CT_LINE_MAX], dst[64], flags[32], netif[CT_IF_MAX], col[16];
    int flags_col = -1, netif_col = -1;
    size_t pos = 0;
    uint32_t addr, mask;

    while (tether__next_line(sec->text, sec->len, &pos, line, sizeof line)) {
        field(line, 0, dst, sizeof dst);
        if (strcmp(dst, "Internet6:") == 0)
            break;
        if (strcmp(dst, "Destination") == 0) {
            for (int i = 1; field(line, i, col, sizeof col), col[0]; i++) {
                if (strcmp(col, "Flags") == 0)
                    flags_col = i;
                else if (strcmp(col, "Netif") == 0)
                    netif_col = i;
            }
            continue;
        }
        if (flags_col < 0 || netif_col < 0)
            continue; /* "Routing tables", "Internet:", or no header yet */
        field(line, flags_col, flags, sizeof flags);
        field(line, netif_col, netif, sizeof netif);
        if (!netif[0] || strchr(flags, 'W') || strcmp(dst, "default") == 0 ||
            ct_parse_bsd_dest(dst, strchr(flags, 'H') != NULL, &addr, &mask) != 0)
            continue;
        if (ct_add_net(h->routes, &h->nroutes, CT_MAX_ROUTES, netif, addr, mask) != 0) {
            snprintf(h->error, sizeof h->error,
                     "netstat -rn: more routes than tether config keeps (%d)", CT_MAX_ROUTES);
            return -1;
        }
    }
    return 0;
}

/* ibv_devices: a header, a dashed line, then "    rdma_en2    8096a9d9edbaac05". */
static void parse_ibv(ct_host *h, const ct_section *sec)
{
    char line[CT_LINE_MAX], dev[CT_IF_MAX], guid[64];
    size_t pos = 0;

    while (tether__next_line(sec->text, sec->len, &pos, line, sizeof line))
        if (sscanf(line, " %31s %63s", dev, guid) == 2 && strcmp(dev, "device") != 0 &&
            dev[0] != '-' && h->nrdma_devs < CT_MAX_PORTS)
            snprintf(h->rdma_devs[h->nrdma_devs++], CT_IF_MAX, "%s", dev);
}

/* The LAN address: the first non-Thunderbolt hardware port (networksetup's order, which is the
 * service order) that has an address. */
static void pick_lan_ip(ct_host *h, const ct_section *secs, int nsecs)
{
    for (int i = 0; i < h->nifaces && !h->lan_ip[0]; i++) {
        if (!h->ifaces[i].hwport[0] || strncmp(h->ifaces[i].hwport, "Thunderbolt", 11) == 0)
            continue;
        for (int s = 0; s < nsecs; s++) {
            size_t n = strlen(h->ifaces[i].name);
            if (strcmp(secs[s].name, "getifaddr") == 0 &&
                strncmp(secs[s].arg, h->ifaces[i].name, n) == 0 && secs[s].arg[n] == ' ')
                snprintf(h->lan_ip, sizeof h->lan_ip, "%s", secs[s].arg + n + 1);
        }
    }
}

static void first_line(const ct_section *sec, char *buf, size_t len)
{
    size_t pos = 0;

    buf[0] = '\0';
    if (sec)
        tether__next_line(sec->text, sec->len, &pos, buf, len);
}

int ct_parse_macos(ct_host *h, const ct_section *secs, int nsecs)
{
    const ct_section *tb = ct_section_find(secs, nsecs, "thunderbolt");
    const ct_section *ports = ct_section_find(secs, nsecs, "ports");
    const ct_section *ifc = ct_section_find(secs, nsecs, "ifconfig");
    const ct_section *routes = ct_section_find(secs, nsecs, "netstat");
    const ct_section *ibv = ct_section_find(secs, nsecs, "ibv_devices");
    const ct_section *rdma = ct_section_find(secs, nsecs, "rdma_ctl");

    h->os = CT_OS_MACOS;
    first_line(ct_section_find(secs, nsecs, "version"), h->os_version, sizeof h->os_version);
    first_line(ct_section_find(secs, nsecs, "model"), h->model, sizeof h->model);
    if (!tb || !ports || !ifc || !routes)
        return fail(h, "probe output lacks the system_profiler, networksetup, ifconfig or netstat "
                       "part");
    if (parse_thunderbolt(h, tb) < 0)
        return -1;
    parse_ports(h, ports); /* first, so interfaces keep networksetup's (service) order */
    if (parse_ifconfig(h, ifc) < 0 || parse_netstat(h, routes) < 0)
        return -1;
    if (ibv)
        parse_ibv(h, ibv);
    /* "disabled" contains "enabled": look for the word on its own. */
    h->rdma_enabled = rdma && strstr(rdma->text, "enabled") && !strstr(rdma->text, "disabled");
    pick_lan_ip(h, secs, nsecs);
    return 0;
}
