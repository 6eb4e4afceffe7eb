/* launcher/launch.c - `tether launch`: plan the job, start every rank, supervise, clean up.
 *
 * Flow: parse options (launch_args.h) -> plan the job (job.h: hosts, ports, token, the per-rank
 * hostfile in a private temp dir) -> the guard is forked, to kill the ranks if the launcher dies
 * (guard.h) -> a spawner (spawn.h: local, or ssh) starts each rank with its environment
 * (launch_env.h) and three pipes -> the supervisor (supervise.h) polls the pipes, the launcher's
 * stdin (stdin_bcast.h) and its signals (signals.h) until every rank is gone -> the plan is
 * removed. Each part lives in its own file, with its own header; only the spawner knows whether a
 * rank is local or remote. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "core/params.h"
#include "core/platform.h"
#include "guard.h"
#include "job.h"
#include "launch_args.h"
#include "launch_say.h"
#include "signals.h"
#include "spawn.h"
#include "ssh_helpers.h"
#include "stdin_bcast.h"
#include "supervise.h"

#if TETHER__LINUX
#include <sys/prctl.h>
#endif

/* Pipes made later must not land on 0, 1 or 2: a rank's dup2 onto them would go wrong. */
static void ensure_std_fds(void)
{
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) < 0) {
            int null = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
            if (null >= 0 && null != fd) {
                dup2(null, fd);
                close(null);
            }
        }
    }
}

/* Start ranks 0..n-1 in order, each through ssh unless its host is this machine; returns how
 * many started (n unless one failed). */
static int start_ranks(const tether__job *job, tether__rank_proc *ranks, tether__bcast *in)
{
    for (int r = 0; r < job->nranks; r++) {
        tether__rank_proc *p = &ranks[r];
        int host = tether__rank_host(job, r);
        p->rank = r;
        if (job->host_local[host]) {
            p->spawner = &tether__spawn_local;
        } else {
            p->spawner = &tether__spawn_ssh;
            p->host = job->hosts.hosts[host].ssh;
            snprintf(p->where, sizeof p->where, " on %s", p->host);
        }
        if (job->opts->verbose)
            tether__launch_say("starting rank %d on %s (%s)", r, job->hosts.hosts[host].ssh,
                               p->spawner->name);
        if (p->spawner->start(job, r, p) != 0)
            return r;
        tether__guard_add(p->pid); /* its process group: spawn.c made it a group leader */
        in->fds[r] = p->in_fd;
    }
    return job->nranks;
}

static int run_job(const tether__launch_opts *o, int sigfd)
{
    tether__job job;
    tether__bcast in = {0};
    tether__rank_proc *ranks = NULL;
    int status = TETHER__LAUNCH_EXIT_FAILED, started;
    if (tether__job_plan(&job, o) != 0) {
        tether__job_cleanup(&job);
        return TETHER__LAUNCH_EXIT_FAILED;
    }
    ranks = calloc((size_t)job.nranks, sizeof *ranks);
    if (!ranks)
        tether__launch_say("out of memory for %d ranks", job.nranks);
    else if (tether__bcast_init(&in, 0, job.nranks) == 0) {
        tether__guard_start(&job);
        started = start_ranks(&job, ranks, &in);
        status = tether__supervise(ranks, started, &in, sigfd,
                                   started < job.nranks ? TETHER__LAUNCH_EXIT_FAILED : -1);
        tether__bcast_free(&in);
        tether__ssh_helpers_wait();
        tether__guard_end();
    }
    free(ranks);
    tether__job_cleanup(&job);
    return status;
}

/* --print-python: the Python .py programs run with, as a path where PATH finds it here. */
static int print_python(const tether__launch_opts *o)
{
    const char *py = tether__launch_python(o), *path = tether__env_raw("PATH");
    char full[PATH_MAX];
    for (const char *p = strchr(py, '/') ? "" : path; p && *p;) {
        size_t len = strcspn(p, ":");
        if (snprintf(full, sizeof full, "%.*s/%s", (int)len, p, py) < (int)sizeof full &&
            access(full, X_OK) == 0) {
            printf("%s\n", full);
            return 0;
        }
        p += len + (p[len] == ':');
    }
    if (strchr(py, '/') && access(py, X_OK) == 0) {
        printf("%s\n", py);
        return 0;
    }
    tether__launch_say("%s: not found on PATH here", py);
    return TETHER__LAUNCH_EXIT_FAILED;
}

int tether__cmd_launch(int argc, char **argv)
{
    tether__launch_opts o;
    int rc = tether__launch_parse(argc, argv, &o), sigfd;
    if (rc == 0 && o.print_python) {
        rc = print_python(&o);
    } else if (rc == 0) {
        ensure_std_fds();
#if TETHER__LINUX
        /* Orphans of a rank's tree become our children, so we reap them at once and a stopped
         * rank's process group empties without waiting on init. */
        prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
        sigfd = tether__signals_install();
        rc = sigfd < 0 ? TETHER__LAUNCH_EXIT_FAILED : run_job(&o, sigfd);
        tether__signals_restore();
    } else if (rc == 1) {
        rc = 0; /* --help */
    }
    free(o.envs);
    free(o.python_cmd);
    return rc;
}
