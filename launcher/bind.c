/* launcher/bind.c - where the ranks started on this machine run (--bind): each gets its own share
 * of the CPUs the launcher may use, as mpirun's --bind-to does.
 *
 * Why: ranks that wait sleep between messages, so the scheduler sees them as light and packs them
 * by wake-up affinity; with 4 ranks on 2 cores it often kept 3 on one core for a whole run, and a
 * small all-reduce then took 1.6x as long, while every 2 + 2 placement ran at one speed
 * (measured: docs/perf/notes.md, launcher/bind.c). A share keeps them apart: with L local ranks
 * and C CPUs, local rank i gets CPUs [i*C/L, (i+1)*C/L) of the allowed list when L <= C, else
 * CPU i mod C.
 * A rank alone on its machine is not bound. Linux only: other systems have no call that binds a
 * process (macOS's affinity tags are hints between threads), so there the system places ranks.
 * Ranks started over ssh get the same share of their host's CPUs through taskset(1), where the host
 * has it (tether__bind_remote). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bind.h"
#include "core/platform.h"
#include "job.h"
#include "launch_args.h"
#include "launch_say.h"
#include "tools/strbuf.h"

#if TETHER__LINUX
#include <sched.h>
#endif

/* Local rank `local` of nlocal on ncpus CPUs: its share (the rule above). */
static void share_of(int local, int nlocal, int ncpus, tether__cpu_share *out)
{
    if (nlocal <= ncpus) {
        out->first = (int)((long)local * ncpus / nlocal);
        out->count = (int)((long)(local + 1) * ncpus / nlocal) - out->first;
    } else {
        out->first = local % ncpus;
        out->count = 1;
    }
}

/* 1 if ranks a and b run on one machine: both on this one (hosts that are this machine may be
 * listed more than once, under different names), or both through the same ssh destination. */
static int same_machine(const tether__job *job, int a, int b)
{
    int ha = tether__rank_host(job, a), hb = tether__rank_host(job, b);
    if (job->host_local[ha] || job->host_local[hb])
        return job->host_local[ha] && job->host_local[hb];
    return ha == hb || !strcmp(job->hosts.hosts[ha].ssh, job->hosts.hosts[hb].ssh);
}

/* Rank r's place among the ranks on its machine, and how many those are. */
static int local_index(const tether__job *job, int r, int *nlocal)
{
    int index = -1, n = 0;
    for (int i = 0; i < job->nranks; i++) {
        if (!same_machine(job, i, r))
            continue;
        if (i == r)
            index = n;
        n++;
    }
    *nlocal = n;
    return index;
}

#if TETHER__LINUX
/* The CPUs this process may run on, in order; their count, or 0 when unknown. */
static int allowed_cpus(cpu_set_t *set)
{
    CPU_ZERO(set);
    if (sched_getaffinity(0, sizeof *set, set) != 0)
        return 0; /* more CPUs than a cpu_set_t holds: leave placement to the system */
    return CPU_COUNT(set);
}

/* The k-th CPU of set (k from 0), or -1. */
static int nth_cpu(const cpu_set_t *set, int k)
{
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, set) && k-- == 0)
            return c;
    return -1;
}
#endif

int tether__bind_plan(const tether__job *job, int rank, tether__cpu_share *out)
{
    int nlocal, local = local_index(job, rank, &nlocal), ncpus = 0;
    if (job->opts->bind != TETHER__BIND_SPREAD || nlocal < 2)
        return 0;
#if TETHER__LINUX
    cpu_set_t set;
    ncpus = allowed_cpus(&set);
#endif
    if (ncpus < 1)
        return 0;
    share_of(local, nlocal, ncpus, out);
#if TETHER__LINUX
    if (job->opts->verbose) {
        int from = nth_cpu(&set, out->first), to = nth_cpu(&set, out->first + out->count - 1);
        if (from == to)
            tether__launch_say("rank %d runs on CPU %d (--bind spread)", rank, from);
        else
            tether__launch_say("rank %d runs on CPUs %d to %d of this machine's allowed ones "
                               "(--bind spread)",
                               rank, from, to);
    }
#endif
    return 1;
}

void tether__bind_child(int rank, const tether__cpu_share *share)
{
#if TETHER__LINUX
    cpu_set_t allowed, mine;
    if (!allowed_cpus(&allowed))
        return;
    CPU_ZERO(&mine);
    for (int k = share->first; k < share->first + share->count; k++) {
        int c = nth_cpu(&allowed, k);
        if (c >= 0)
            CPU_SET(c, &mine);
    }
    /* A failure only costs speed: say so on the rank's stderr and run unbound. */
    if (CPU_COUNT(&mine) == 0 || sched_setaffinity(0, sizeof mine, &mine) != 0)
        dprintf(2, "tether launch: rank %d: cannot bind to its CPUs (%s); running unbound\n", rank,
                strerror(errno ? errno : EINVAL));
#else
    (void)rank, (void)share;
#endif
}

/* The remote side computes the same share in sh: taskset -pc lists the CPUs the rank's shell may
 * use ("pid 12's current affinity list: 0-3,8"), awk numbers them and picks the share, and the
 * program runs under taskset -c SHARE. A host without taskset (macOS), or where it fails, runs the
 * program as it is. */
void tether__bind_remote(const tether__job *job, int rank, tether__strbuf *b)
{
    int nlocal, local = local_index(job, rank, &nlocal);
    tether__sb_add(b, "tb=\n");
    if (job->opts->bind != TETHER__BIND_SPREAD || nlocal < 2)
        return;
    tether__sb_addf(
        b,
        "if command -v taskset >/dev/null 2>&1; then\n"
        "  s=$(taskset -pc $$ 2>/dev/null | sed 's/.*: *//' | awk -F, -v i=%d -v n=%d '\n"
        "    { for (f = 1; f <= NF; f++) { m = split($f, r, \"-\"); hi = m > 1 ? r[2] : r[1]\n"
        "        for (c = r[1] + 0; c <= hi + 0; c++) cpu[k++] = c } }\n"
        "    END { if (k < 1) exit; if (n <= k) { a = int(i * k / n); e = int((i + 1) * k / n) }\n"
        "          else { a = i %% k; e = a + 1 }\n"
        "          for (j = a; j < e; j++) out = out (j > a ? \",\" : \"\") cpu[j]; print out }')\n"
        "  [ -n \"$s\" ] && taskset -c \"$s\" true 2>/dev/null && tb=\"taskset -c $s\"\n"
        "fi\n",
        local, nlocal);
    if (job->opts->verbose)
        tether__sb_addf(b,
                        "[ -n \"$tb\" ] && echo \"tether launch: rank %d runs on CPUs $s of its "
                        "host (--bind spread)\" >&2\n",
                        rank);
}
