/* launcher/launch_plan.c - plan one job: listen addresses and ports, job token, private temp dir
 * holding the per-rank hostfile; and removing it all afterwards. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backends/net/port.h"
#include "core/params.h"
#include "core/random.h"
#include "hostfile/hostfile.h"
#include "job.h"
#include "launch_args.h"
#include "launch_say.h"
#include "tether.h"

/* Random hex token: ranks of this job prove they know it on every connection. */
static int make_token(char *hex)
{
    unsigned char raw[TETHER__LAUNCH_TOKEN_BYTES];
    if (tether__random_bytes(raw, sizeof raw) < 0) {
        tether__launch_say("cannot read /dev/urandom for the job token: %s", strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

/* A free port on host (this machine), listened on in *fd until the whole job is planned
 * (backends/net/port.h says how it is drawn). */
static int pick_free_port(tether__hostaddr *a, int *fd)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE},
                    *ai = NULL;
    int gai = getaddrinfo(a->host, "0", &hints, &ai), port;
    if (gai != 0) {
        tether__launch_say("cannot pick a free port on %s: %s", a->host, gai_strerror(gai));
        return -1;
    }
    port = tether__net_free_port(ai->ai_addr, ai->ai_addrlen, fd);
    freeaddrinfo(ai);
    if (port < 0) {
        *fd = -1;
        tether__launch_say("cannot pick a free port on %s: %s", a->host, strerror(errno));
        return -1;
    }
    a->port = port;
    return 0;
}

static int free_ports(tether__hostaddr **slots, int n)
{
    int *fds = malloc((size_t)n * sizeof *fds), rc = 0, i;
    if (!fds) {
        tether__launch_say("out of memory picking %d ports", n);
        return -1;
    }
    for (i = 0; i < n && rc == 0; i++)
        rc = pick_free_port(slots[i], &fds[i]);
    while (i-- > 0)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
    return rc;
}

/* Ports counting up from the first, in slot order. */
static int count_ports(tether__hostaddr **slots, int n, int first, const char *why)
{
    if ((long)first + n - 1 > 65535) {
        tether__launch_say("%s %d: the job needs %d ports, past 65535", why, first, n);
        return -1;
    }
    for (int i = 0; i < n; i++)
        slots[i]->port = first + i;
    return 0;
}

static int all_hosts_local(const tether__job *job)
{
    for (int i = 0; i < job->hosts.nhosts; i++)
        if (!job->host_local[i])
            return 0;
    return 1;
}

/* Every port the job needs: the listen addresses in order, then MASTER_PORT on rank 0's first
 * address. --starting-port counts up from it (mlx.launch's rule); without it, free ports when
 * every host is this machine (we can ask the system), else counting from 5000. */
static int assign_ports(tether__job *job)
{
    tether__rank_hosts *h = &job->addrs;
    tether__hostaddr master = h->addrs[0][0], **slots;
    int n = 0, rc;
    for (int r = 0; r < h->nranks; r++)
        n += h->naddrs[r];
    if (!(slots = malloc(((size_t)n + 1) * sizeof *slots))) {
        tether__launch_say("out of memory planning ports");
        return -1;
    }
    n = 0;
    for (int r = 0; r < h->nranks; r++)
        for (int a = 0; a < h->naddrs[r]; a++)
            slots[n++] = &h->addrs[r][a];
    slots[n++] = &master;
    if (job->opts->starting_port)
        rc = count_ports(slots, n, job->opts->starting_port, "--starting-port");
    else if (!all_hosts_local(job))
        rc = count_ports(slots, n, TETHER__LAUNCH_DEFAULT_PORT, "remote hosts: default first port");
    else
        rc = free_ports(slots, n);
    free(slots);
    snprintf(job->master_addr, sizeof job->master_addr, "%s", master.host);
    job->master_port = master.port;
    return rc;
}

/* The per-rank hostfile's contents: each rank listens on every address of its host,
 * conns_per_ip times (ports come after). */
static int plan_addrs(tether__job *job)
{
    int n = job->nranks, k = job->opts->conns_per_ip;
    tether__rank_hosts *h = &job->addrs;
    h->naddrs = calloc((size_t)n, sizeof *h->naddrs);
    h->addrs = calloc((size_t)n, sizeof *h->addrs);
    if (!h->naddrs || !h->addrs)
        goto oom;
    h->nranks = n;
    for (int r = 0; r < n; r++) {
        const tether__launch_host *host = &job->hosts.hosts[tether__rank_host(job, r)];
        if (!(h->addrs[r] = calloc((size_t)(host->nips * k), sizeof *h->addrs[r])))
            goto oom;
        for (int ip = 0; ip < host->nips; ip++)
            for (int c = 0; c < k; c++)
                snprintf(h->addrs[r][h->naddrs[r]++].host, TETHER__HOST_MAX, "%s", host->ips[ip]);
    }
    return assign_ports(job);
oom:
    tether__launch_say("out of memory planning %d ranks", n);
    return -1;
}

static int make_tmpdir(tether__job *job)
{
    const char *base = tether__env_raw("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    if (snprintf(job->tmpdir, sizeof job->tmpdir, "%s/tether-launch-XXXXXX", base) >=
        (int)sizeof job->tmpdir) {
        tether__launch_say("TMPDIR=%s: path too long", base);
        job->tmpdir[0] = '\0';
        return -1;
    }
    if (!mkdtemp(job->tmpdir)) {
        tether__launch_say("cannot make a temp dir under %s: %s (set TMPDIR to a writable dir)",
                           base, strerror(errno));
        job->tmpdir[0] = '\0';
        return -1;
    }
    return 0;
}

/* How many ranks, where: -n on this machine, or -n (default 1) on each host. */
static int count_ranks(tether__job *job)
{
    const tether__launch_opts *o = job->opts;
    long per_host = o->nranks ? o->nranks : 1, n = per_host * job->hosts.nhosts;
    if (n > TETHER__LAUNCH_MAX_RANKS) {
        tether__launch_say("%d hosts x %ld ranks: more than %d ranks", job->hosts.nhosts, per_host,
                           TETHER__LAUNCH_MAX_RANKS);
        return -1;
    }
    job->ranks_per_host = (int)per_host;
    job->nranks = (int)n;
    return 0;
}

int tether__job_plan(tether__job *job, const tether__launch_opts *o)
{
    memset(job, 0, sizeof *job);
    job->opts = o;
    if (!getcwd(job->cwd, sizeof job->cwd))
        job->cwd[0] = '\0'; /* remote ranks then start in their home */
    if (tether__job_hosts(job) != 0 || count_ranks(job) != 0)
        return -1;
    /* --backend, else the hostfile's, else rdma where the hosts list RDMA devices (an MLX JACCL
     * hostfile), else "any" in every rank. */
    job->backend = o->backend                    ? o->backend
                   : job->hosts.backend[0]       ? job->hosts.backend
                   : tether__job_lists_rdma(job) ? "rdma"
                                                 : NULL;
    if (make_token(job->token) != 0 || plan_addrs(job) != 0 || make_tmpdir(job) != 0 ||
        tether__job_files(job) != 0)
        return -1;
    if (o->verbose)
        tether__launch_say("%d rank%s on %d host%s, files in %s, first port %d, %s %d", job->nranks,
                           job->nranks == 1 ? "" : "s", job->hosts.nhosts,
                           job->hosts.nhosts == 1 ? "" : "s", job->tmpdir,
                           job->addrs.addrs[0][0].port, tether__master_port, job->master_port);
    return 0;
}

void tether__job_cleanup(tether__job *job)
{
    for (int i = 0; i < job->nfiles; i++) {
        if (unlink(job->files[i].path) != 0 && errno != ENOENT)
            tether__launch_say("cannot remove %s: %s", job->files[i].path, strerror(errno));
        free(job->files[i].text);
    }
    job->nfiles = 0;
    if (job->tmpdir[0] && rmdir(job->tmpdir) != 0)
        tether__launch_say("cannot remove temp dir %s: %s", job->tmpdir, strerror(errno));
    job->tmpdir[0] = '\0';
    tether__rank_hosts_free(&job->addrs);
    tether__launch_hosts_free(&job->hosts);
    free(job->host_local);
    job->host_local = NULL;
}
