/* launcher/launch_hosts.c - where a job's ranks run: --hosts, --hostfile or this machine, and
 * which hosts are this machine (started without ssh). */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hostfile/hostfile.h"
#include "job.h"
#include "launch_args.h"
#include "launch_say.h"
#include "tether.h"

/* 1 if text is an IP address assigned to one of this machine's interfaces. */
static int is_own_address(const char *text)
{
    unsigned char want[16], have[16];
    int family = strchr(text, ':') ? AF_INET6 : AF_INET, found = 0;
    struct ifaddrs *ifs, *i;
    if (inet_pton(family, text, want) != 1 || getifaddrs(&ifs) != 0)
        return 0;
    for (i = ifs; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != family)
            continue;
        if (family == AF_INET)
            memcpy(have, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
        else
            memcpy(have, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
        found = memcmp(want, have, family == AF_INET ? 4 : 16) == 0;
    }
    freeifaddrs(ifs);
    return found;
}

/* 1 if name is this machine's host name, with or without its domain. */
static int is_own_name(const char *name)
{
    char self[256];
    size_t n = strcspn(name, "."), m;
    if (gethostname(self, sizeof self) != 0)
        return 0;
    self[sizeof self - 1] = '\0';
    m = strcspn(self, ".");
    return strcmp(name, self) == 0 ||
           (n == m && strncmp(name, self, n) == 0 && (name[n] == '\0' || self[m] == '\0'));
}

/* A host is this machine when its ssh destination is localhost, a loopback address (all of
 * 127.0.0.0/8, ::1), one of our own addresses, or our host name. "user@..." always goes through
 * ssh: another user was asked for. */
int tether__host_is_local(const char *ssh)
{
    struct in_addr a4;
    if (strchr(ssh, '@'))
        return 0;
    if (strcmp(ssh, "localhost") == 0 || strcmp(ssh, "::1") == 0)
        return 1;
    if (inet_pton(AF_INET, ssh, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127)
        return 1;
    return is_own_address(ssh) || is_own_name(ssh);
}

/* One host per comma-separated entry (addresses come later, from the names). */
static int hosts_from_list(const char *list, tether__launch_hosts *h)
{
    int n = 1;
    for (const char *c = list; *c; c++)
        n += *c == ',';
    h->hosts = calloc((size_t)n, sizeof *h->hosts);
    if (!h->hosts)
        return -1;
    for (const char *at = list; h->nhosts < n; at += strcspn(at, ",") + 1) {
        tether__launch_host *host = &h->hosts[h->nhosts++];
        size_t len = strcspn(at, ",");
        if (len >= sizeof host->ssh) { /* empty entries were refused with the options */
            tether__launch_say("--hosts: entry %d is longer than %zu characters", h->nhosts,
                               sizeof host->ssh - 1);
            return -2;
        }
        memcpy(host->ssh, at, len); /* calloc'd, so the name stays NUL-terminated */
    }
    return 0;
}

/* A host given without "ips" listens on the address its ssh name stands for. */
static int default_ips(tether__launch_host *host)
{
    const char *at = strchr(host->ssh, '@');
    if (host->nips > 0)
        return 0;
    free(host->ips); /* an empty "ips": [] still has its (empty) list */
    if (!(host->ips = calloc(1, sizeof *host->ips)))
        return -1;
    host->nips = 1;
    snprintf(host->ips[0], sizeof host->ips[0], "%s", at ? at + 1 : host->ssh);
    return 0;
}

/* The local job: one host, this machine, listening on loopback. */
static int hosts_local(tether__launch_hosts *h)
{
    if (!(h->hosts = calloc(1, sizeof *h->hosts)))
        return -1;
    h->nhosts = 1;
    snprintf(h->hosts[0].ssh, sizeof h->hosts[0].ssh, "127.0.0.1");
    return 0;
}

int tether__job_hosts(tether__job *job)
{
    const tether__launch_opts *o = job->opts;
    tether__launch_hosts *h = &job->hosts;
    int rc;
    if (o->hostfile) {
        if (tether__hostfile_load_launch(o->hostfile, h) != 0) {
            tether__launch_say("%s", tether_last_error());
            return -1;
        }
        rc = h->nhosts > 0 ? 0 : (tether__launch_say("%s: lists no hosts", o->hostfile), -2);
    } else {
        rc = o->hosts ? hosts_from_list(o->hosts, h) : hosts_local(h);
    }
    if (rc == 0 && !(job->host_local = calloc((size_t)h->nhosts, sizeof *job->host_local)))
        rc = -1;
    for (int i = 0; rc == 0 && i < h->nhosts; i++) {
        job->host_local[i] = tether__host_is_local(h->hosts[i].ssh);
        rc = default_ips(&h->hosts[i]);
    }
    if (rc == -1)
        tether__launch_say("out of memory reading the hosts");
    return rc == 0 ? 0 : -1;
}
