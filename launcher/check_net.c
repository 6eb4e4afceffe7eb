/* launcher/check_net.c - `tether check` on this machine: network interfaces, which are
 * Thunderbolt, which pass TETHER_IFACE_PRIORITY, RDMA devices, and the problems among them. */
#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/platform.h"

#define MAX_ADDRS 128

typedef struct v4addr {
    char iface[IF_NAMESIZE];
    uint32_t addr, mask; /* host byte order */
    int loopback, up;
} v4addr;

#if defined(__APPLE__)
/* macOS: `networksetup -listallhardwareports` names each port ("Hardware Port: Thunderbolt 1")
 * above its device ("Device: en2"). */
static int is_thunderbolt(const char *iface)
{
    char line[256], port[128] = "";
    int found = 0;
    FILE *p = popen("networksetup -listallhardwareports 2>/dev/null", "r");
    if (!p)
        return 0;
    while (!found && fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "Hardware Port: ", 15) == 0)
            snprintf(port, sizeof port, "%s", line + 15);
        else if (strncmp(line, "Device: ", 8) == 0)
            found = strcmp(line + 8, iface) == 0 && strncmp(port, "Thunderbolt ", 12) == 0;
    }
    pclose(p);
    return found;
}

/* macOS: the bridge listing iface as a "member:" in `ifconfig` (the Thunderbolt Bridge is
 * bridge0), "" when none. */
static void master_of(const char *iface, char *out, size_t len)
{
    char line[256], cur[64] = "", member[64];
    FILE *p = popen("ifconfig -a 2>/dev/null", "r");
    out[0] = '\0';
    if (!p)
        return;
    while (!out[0] && fgets(line, sizeof line, p)) {
        if (line[0] != '\t' && line[0] != ' ')
            sscanf(line, "%63[^:]", cur);
        else if (sscanf(line, " member: %63s", member) == 1 && strcmp(member, iface) == 0)
            snprintf(out, len, "%s", cur);
    }
    pclose(p);
}
#else
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
 * sysfs). */
static int is_thunderbolt(const char *iface)
{
    char path[256], driver[128];
    if (snprintf(path, sizeof path, "/sys/class/net/%s/device/driver", iface) >= (int)sizeof path)
        return 0;
    link_name(path, driver, sizeof driver);
    return strstr(driver, "thunderbolt") != NULL;
}

/* The bridge (or bond) an interface is enslaved to, "" when none. */
static void master_of(const char *iface, char *out, size_t len)
{
    char path[256];
    out[0] = '\0';
    if (snprintf(path, sizeof path, "/sys/class/net/%s/master", iface) < (int)sizeof path)
        link_name(path, out, len);
}
#endif

static int prefix_len(uint32_t mask)
{
    int n = 0;
    for (; mask & 0x80000000u; mask <<= 1)
        n++;
    return n;
}

static int collect_v4(v4addr *out, int max)
{
    struct ifaddrs *ifs, *i;
    int n = 0;
    if (getifaddrs(&ifs) != 0)
        return -1;
    for (i = ifs; i && n < max; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_netmask)
            continue;
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

static void list_interfaces(tether__hostcheck_report *r, const v4addr *a, int n,
                            const tether_config *cfg)
{
    tether__sb_add(&r->text, "interfaces (IPv4):\n");
    for (int i = 0; i < n; i++) {
        char ip[INET_ADDRSTRLEN], master[64];
        struct in_addr in = {.s_addr = htonl(a[i].addr)};
        int tb = is_thunderbolt(a[i].iface);
        inet_ntop(AF_INET, &in, ip, sizeof ip);
        master_of(a[i].iface, master, sizeof master);
        tether__sb_addf(
            &r->text, "  %-14s %s/%d%s%s%s%s\n", a[i].iface, ip, prefix_len(a[i].mask),
            a[i].up ? "" : "  down", a[i].loopback ? "  loopback" : "", tb ? "  thunderbolt" : "",
            cfg->nprefixes == 0             ? ""
            : tether__addr_allowed(cfg, ip) ? "  passes TETHER_IFACE_PRIORITY"
                                            : "  filtered out by TETHER_IFACE_PRIORITY");
        if (tb && master[0])
            tether__hostcheck_problem(r,
                                      "%s is a Thunderbolt interface in bridge %s: take it out of "
                                      "the bridge and give it its own address",
                                      a[i].iface, master);
    }
#if !TETHER_LINUX && !defined(__APPLE__)
    tether__sb_add(&r->text, "  (Thunderbolt interfaces are recognised on Linux and macOS only)\n");
#endif
}

/* Two interfaces in one IPv4 subnet: the kernel sends that subnet's traffic through one of
 * them only, so the other cable carries nothing. */
static void check_subnets(tether__hostcheck_report *r, const v4addr *a, int n)
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

static int has_v4(const v4addr *a, int n, const char *iface)
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
static void rdma_device(tether__hostcheck_report *r, const char *dev, const v4addr *a, int n)
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

static void list_rdma(tether__hostcheck_report *r, const v4addr *a, int n)
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

void tether__hostcheck_net(tether__hostcheck_report *r, const tether_config *cfg)
{
    v4addr a[MAX_ADDRS];
    int n = collect_v4(a, MAX_ADDRS);
    if (n < 0) {
        tether__hostcheck_problem(r, "cannot list network interfaces (getifaddrs failed)");
        return;
    }
    list_interfaces(r, a, n, cfg);
    check_subnets(r, a, n);
    list_rdma(r, a, n);
}
