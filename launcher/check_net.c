/* launcher/check_net.c - `tether check` on this machine: network interfaces, which are
 * Thunderbolt, which pass TETHER_IFACE_PRIORITY, RDMA devices, and the problems among them. */
#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/params.h"
#include "core/platform.h"
#include "tools/netcmd_text.h"
#include "tools/strbuf.h"

#define MAX_ADDRS 128

void tether__hostcheck_macos_ports(tether__hostcheck_addr *a, int n, const char *hwports,
                                   const char *ifconfig)
{
    for (int i = 0; i < n; i++) {
        tether__hwport port;
        tether__ifc_line l = {0};
        size_t pos = 0;
        a[i].thunderbolt = 0;
        a[i].master[0] = '\0';
        while (!a[i].thunderbolt && tether__hwport_next(hwports, strlen(hwports), &pos, &port))
            a[i].thunderbolt = port.receptacle > 0 && strcmp(port.device, a[i].iface) == 0;
        pos = 0;
        while (!a[i].master[0] && tether__ifconfig_next(ifconfig, strlen(ifconfig), &pos, &l))
            if (l.kind == TETHER__IFC_MEMBER && strcmp(l.member, a[i].iface) == 0)
                snprintf(a[i].master, sizeof a[i].master, "%.*s", IF_NAMESIZE - 1, l.iface);
    }
}

#if defined(__APPLE__)
/* What cmd prints (malloc'd), "" when it cannot run. */
static char *command_output(const char *cmd)
{
    tether__strbuf b = {0};
    char chunk[4096];
    size_t got;
    FILE *p = popen(cmd, "r");

    tether__sb_add(&b, "");
    while (p && (got = fread(chunk, 1, sizeof chunk - 1, p)) > 0) {
        chunk[got] = '\0';
        tether__sb_add(&b, chunk);
    }
    if (p)
        pclose(p);
    return tether__sb_take(&b, "a command's output");
}

/* macOS: networksetup names each Thunderbolt port's interface; ifconfig lists bridge members. */
static void mark_ports(tether__hostcheck_addr *a, int n)
{
    char *ports = command_output("networksetup -listallhardwareports 2>/dev/null");
    char *ifc = command_output("ifconfig -a 2>/dev/null");

    tether__hostcheck_macos_ports(a, n, ports ? ports : "", ifc ? ifc : "");
    free(ports);
    free(ifc);
}
#elif TETHER__LINUX
/* Basename of the symlink at path, "" when it is not one. */
static void link_name(const char *path, char *out, size_t len)
{
    char target[512];
    ssize_t n = readlink(path, target, sizeof target - 1);
    const char *base;
    out[0] = '\0';
    if (n <= 0)
        return;
    target[n] = '\0';
    base = strrchr(target, '/');
    if (snprintf(out, len, "%s", base ? base + 1 : target) >= (int)len)
        out[0] = '\0'; /* a name this long is none we look for */
}

/* Linux: a Thunderbolt network interface is driven by thunderbolt-net ("thunderbolt_net" in
 * sysfs); /sys/class/net/IF/master names the bridge (or bond) it is enslaved to. */
static void mark_ports(tether__hostcheck_addr *a, int n)
{
    for (int i = 0; i < n; i++) {
        char path[256], driver[128];
        if (snprintf(path, sizeof path, "/sys/class/net/%s/device/driver", a[i].iface) <
            (int)sizeof path) {
            link_name(path, driver, sizeof driver);
            a[i].thunderbolt = strstr(driver, "thunderbolt") != NULL;
        }
        if (snprintf(path, sizeof path, "/sys/class/net/%s/master", a[i].iface) < (int)sizeof path)
            link_name(path, a[i].master, sizeof a[i].master);
    }
}
#else
static void mark_ports(tether__hostcheck_addr *a, int n)
{
    (void)a; /* no way to tell Thunderbolt interfaces here (the report says so) */
    (void)n;
}
#endif

static int prefix_len(uint32_t mask)
{
    int n = 0;
    for (; mask & 0x80000000u; mask <<= 1)
        n++;
    return n;
}

static int collect_v4(tether__hostcheck_addr *out, int max)
{
    struct ifaddrs *ifs, *i;
    int n = 0;
    if (getifaddrs(&ifs) != 0)
        return -1;
    for (i = ifs; i && n < max; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_netmask)
            continue;
        memset(&out[n], 0, sizeof out[n]);
        snprintf(out[n].iface, sizeof out[n].iface, "%s", i->ifa_name);
        out[n].addr = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
        out[n].mask = ntohl(((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr);
        out[n].loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
        out[n].up = (i->ifa_flags & IFF_UP) != 0;
        n++;
    }
    freeifaddrs(ifs);
    return n;
}

void tether__hostcheck_interfaces(tether__hostcheck_report *r, const tether__config *cfg,
                                  const tether__hostcheck_addr *a, int n)
{
    tether__sb_add(&r->text, "interfaces (IPv4):\n");
    for (int i = 0; i < n; i++) {
        char ip[INET_ADDRSTRLEN];
        struct in_addr in = {.s_addr = htonl(a[i].addr)};
        inet_ntop(AF_INET, &in, ip, sizeof ip);
        const char *verdict = cfg->nprefixes == 0             ? ""
                              : tether__addr_allowed(cfg, ip) ? "  passes "
                                                              : "  filtered out by ";
        tether__sb_addf(&r->text, "  %-14s %s/%d%s%s%s%s%s\n", a[i].iface, ip,
                        prefix_len(a[i].mask), a[i].up ? "" : "  down",
                        a[i].loopback ? "  loopback" : "", a[i].thunderbolt ? "  thunderbolt" : "",
                        verdict, *verdict ? tether__param_from(TETHER__P_IFACE_PRIORITY) : "");
        if (a[i].thunderbolt && a[i].master[0])
            tether__hostcheck_problem(r,
                                      "%s is a Thunderbolt interface in bridge %s: take it out of "
                                      "the bridge and give it its own address",
                                      a[i].iface, a[i].master);
    }
#if !TETHER__LINUX && !defined(__APPLE__)
    tether__sb_add(&r->text, "  (Thunderbolt interfaces are recognised on Linux and macOS only)\n");
#endif
}

/* Two interfaces in one IPv4 subnet: the kernel sends that subnet's traffic through one of
 * them only, so the other cable carries nothing. */
static void check_subnets(tether__hostcheck_report *r, const tether__hostcheck_addr *a, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (a[i].loopback || a[j].loopback || strcmp(a[i].iface, a[j].iface) == 0 ||
                a[i].mask != a[j].mask || (a[i].addr & a[i].mask) != (a[j].addr & a[j].mask))
                continue;
            char net[INET_ADDRSTRLEN];
            struct in_addr in = {.s_addr = htonl(a[i].addr & a[i].mask)};
            inet_ntop(AF_INET, &in, net, sizeof net);
            tether__hostcheck_problem(r,
                                      "%s and %s are both in %s/%d: traffic to it leaves through "
                                      "one of them only; give each cable its own subnet",
                                      a[i].iface, a[j].iface, net, prefix_len(a[i].mask));
        }
}

static int has_v4(const tether__hostcheck_addr *a, int n, const char *iface)
{
    for (int i = 0; i < n; i++)
        if (strcmp(a[i].iface, iface) == 0)
            return 1;
    return 0;
}

/* Non-zero GIDs of port dir (a RoCE port needs one derived from an IPv4 address). */
static int count_gids(const char *port_dir)
{
    char path[512], gid[64];
    int n = 0;
    for (int i = 0; i < 256; i++) {
        FILE *f;
        if (snprintf(path, sizeof path, "%s/gids/%d", port_dir, i) >= (int)sizeof path ||
            !(f = fopen(path, "r")))
            break;
        if (fgets(gid, sizeof gid, f) && strspn(gid, "0:\n") != strlen(gid))
            n++;
        fclose(f);
    }
    return n;
}

/* One RDMA device: its ports with state and GIDs, and the network interface behind it. */
static void rdma_device(tether__hostcheck_report *r, const char *dev,
                        const tether__hostcheck_addr *a, int n)
{
    char path[512], state[64] = "";
    struct dirent *e;
    DIR *d;
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/1/state", dev);
    FILE *f = fopen(path, "r");
    if (f) {
        if (!fgets(state, sizeof state, f))
            state[0] = '\0';
        state[strcspn(state, "\n")] = '\0';
        fclose(f);
    }
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/1", dev);
    tether__sb_addf(&r->text, "  %-14s port 1 %s, %d GIDs\n", dev, state[0] ? state : "(no state)",
                    count_gids(path));
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/device/net", dev);
    if (!(d = opendir(path)))
        return;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && !has_v4(a, n, e->d_name))
            tether__hostcheck_problem(r,
                                      "RDMA device %s: its interface %s has no IPv4 address, so "
                                      "no RoCE GID to reach peers by",
                                      dev, e->d_name);
    closedir(d);
}

static void list_rdma(tether__hostcheck_report *r, const tether__hostcheck_addr *a, int n)
{
    DIR *d = opendir("/sys/class/infiniband");
    struct dirent *e;
    int found = 0;
    tether__sb_add(&r->text, "RDMA devices:\n");
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            rdma_device(r, e->d_name, a, n);
            found = 1;
        }
    if (d)
        closedir(d);
    if (!found)
        tether__sb_add(&r->text, "  none\n");
}

void tether__hostcheck_net(tether__hostcheck_report *r, const tether__config *cfg)
{
    tether__hostcheck_addr a[MAX_ADDRS];
    int n = collect_v4(a, MAX_ADDRS);
    if (n < 0) {
        tether__hostcheck_problem(r, "cannot list network interfaces (getifaddrs failed)");
        return;
    }
    mark_ports(a, n);
    tether__hostcheck_interfaces(r, cfg, a, n);
    check_subnets(r, a, n);
    list_rdma(r, a, n);
}
