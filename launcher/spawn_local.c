/* launcher/spawn_local.c - the local rank spawner: the program itself, on this machine. */
#include <signal.h>

#include "bind.h"
#include "job.h"
#include "launch_env.h"
#include "spawn.h"

static int local_start(const tether__job *job, int rank, tether__rank_proc *p)
{
    tether__envlist env;
    tether__cpu_share cpus;
    int rc, bound = tether__bind_plan(job, rank, &cpus);
    if (tether__rank_env(job, rank, 1, &env) != 0)
        return -1;
    rc = tether__spawn_process(job, p, job->opts->cmd, &env, job->opts->cwd, bound ? &cpus : NULL);
    tether__envlist_free(&env);
    return rc;
}

/* The rank's process group is its pid, and the group outlives the leader while any of its
 * children live, so this reaches stragglers after the rank itself has exited. */
static int local_signal(tether__rank_proc *p, int sig)
{
    return kill(-p->pid, sig) == 0 ? 0 : -1;
}

const tether__spawner tether__spawn_local = {
    .name = "local",
    .start = local_start,
    .signal = local_signal,
};
