/* config_tool/macos.c - reading a macOS host: system_profiler's Thunderbolt tree, hardware ports,
 * ifconfig, ibv_devices and rdma_ctl. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tool/config_tool.h"

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
        snprintf(h->error, sizeof h->error, "system_profiler SPThunderboltDataType -json: invalid "
                 "JSON at line %d, column %d: %s", err.line, err.column, err.text);
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

/* "Hardware Port: Thunderbolt 1" then "Device: en2": names every interface, and gives each
 * Thunderbolt receptacle its interface. */
static void parse_ports(ct_host *h, const ct_section *sec)
{
    char line[CT_LINE_MAX], hwport[48] = "";
    size_t pos = 0;

    while (ct_next_line(sec->text, sec->len, &pos, line, sizeof line)) {
        ct_iface *f;
        int n;
        if (strncmp(line, "Hardware Port: ", 15) == 0) {
            snprintf(hwport, sizeof hwport, "%.47s", line + 15);
            continue;
        }
        if (strncmp(line, "Device: ", 8) != 0 || !hwport[0] || !(f = ct_iface_get(h, line + 8)))
            continue;
        snprintf(f->hwport, sizeof f->hwport, "%s", hwport);
        if (sscanf(hwport, "Thunderbolt %d", &n) == 1)
            for (int p = 0; p < h->nports; p++)
                if (h->ports[p].receptacle == n)
                    snprintf(h->ports[p].iface, CT_IF_MAX, "%s", f->name);
        hwport[0] = '\0';
    }
}

/* "en2: flags=8863<UP,...> mtu 1500", then tab-indented "inet A netmask 0x..." and, in a bridge,
 * "member: en2 flags=...". */
static int parse_ifconfig(ct_host *h, const ct_section *sec)
{
    char line[CT_LINE_MAX], cur[CT_IF_MAX] = "", a[64], name[CT_IF_MAX];
    unsigned mask;
    size_t pos = 0;
    uint32_t addr;

    while (ct_next_line(sec->text, sec->len, &pos, line, sizeof line)) {
        ct_iface *f;
        if (line[0] != '\t' && line[0] != ' ' && sscanf(line, "%31[^:]:", cur) == 1) {
            if ((f = ct_iface_get(h, cur))) {
                const char *m = strstr(line, " mtu ");
                f->up = strstr(line, "<UP") != NULL;
                f->mtu = m ? atoi(m + 5) : 0;
            }
        } else if (sscanf(line, " inet %63s netmask %x", a, &mask) == 2 && cur[0]) {
            if (ct_parse_ipv4(a, &addr) == 0 &&
                ct_add_net(h->addrs, &h->naddrs, CT_MAX_ADDRS, cur, addr, mask) != 0)
                return fail(h, "ifconfig: more IPv4 addresses than tether config keeps (64)");
        } else if (sscanf(line, " member: %31s", name) == 1 && (f = ct_iface_get(h, name))) {
            snprintf(f->bridge, sizeof f->bridge, "%s", cur);
        }
    }
    return 0;
}

/* ibv_devices: a header, a dashed line, then "    rdma_en2    8096a9d9edbaac05". */
static void parse_ibv(ct_host *h, const ct_section *sec)
{
    char line[CT_LINE_MAX], dev[CT_IF_MAX], guid[64];
    size_t pos = 0;

    while (ct_next_line(sec->text, sec->len, &pos, line, sizeof line))
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
        ct_next_line(sec->text, sec->len, &pos, buf, len);
}

int ct_parse_macos(ct_host *h, const ct_section *secs, int nsecs)
{
    const ct_section *tb = ct_section_find(secs, nsecs, "thunderbolt");
    const ct_section *ports = ct_section_find(secs, nsecs, "ports");
    const ct_section *ifc = ct_section_find(secs, nsecs, "ifconfig");
    const ct_section *ibv = ct_section_find(secs, nsecs, "ibv_devices");
    const ct_section *rdma = ct_section_find(secs, nsecs, "rdma_ctl");

    h->os = CT_OS_MACOS;
    first_line(ct_section_find(secs, nsecs, "version"), h->os_version, sizeof h->os_version);
    first_line(ct_section_find(secs, nsecs, "model"), h->model, sizeof h->model);
    if (!tb || !ports || !ifc)
        return fail(h, "probe output lacks the system_profiler, networksetup or ifconfig part");
    if (parse_thunderbolt(h, tb) < 0)
        return -1;
    parse_ports(h, ports); /* first, so interfaces keep networksetup's (service) order */
    if (parse_ifconfig(h, ifc) < 0)
        return -1;
    if (ibv)
        parse_ibv(h, ibv);
    /* "disabled" contains "enabled": look for the word on its own. */
    h->rdma_enabled = rdma && strstr(rdma->text, "enabled") && !strstr(rdma->text, "disabled");
    pick_lan_ip(h, secs, nsecs);
    return 0;
}
