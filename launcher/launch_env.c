/* launcher/launch_env.c - the variables each rank gets: TETHER_*, MLX's, torchrun's, then the
 * user's --env. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/params.h"
#include "job.h"
#include "launch_args.h"
#include "launch_env.h"
#include "launch_say.h"

/* Append a copy of "NAME=value". 0, or -1 when out of memory. */
static int env_add_kv(tether__envlist *e, const char *kv)
{
    if (e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 32;
        char **grown = realloc(e->kv, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        e->kv = grown;
        e->cap = cap;
    }
    if (!(e->kv[e->n] = strdup(kv)))
        return -1;
    e->n++;
    return 0;
}

/* Append "name=value", value from fmt (values we make are short: numbers, paths, tokens). */
static int env_add(tether__envlist *e, const char *name, const char *fmt, ...) TETHER__PRINTF(3, 4);

static int env_add(tether__envlist *e, const char *name, const char *fmt, ...)
{
    char kv[PATH_MAX + 64];
    int len = snprintf(kv, sizeof kv, "%s=", name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(kv + len, sizeof kv - (size_t)len, fmt, ap);
    va_end(ap);
    return env_add_kv(e, kv);
}

int tether__rank_env(const tether__job *job, int rank, int files, tether__envlist *out)
{
    const tether__launch_opts *o = job->opts;
    int rc = 0;
    memset(out, 0, sizeof *out);
    /* The names come from the settings' rows: MLX's are the first aliases, as mlx.launch sets
     * them, so an MLX program runs unchanged under tether. */
    rc |= env_add(out, TETHER__VAR(RANK), "%d", rank);
    rc |= env_add(out, TETHER__VAR(SIZE), "%d", job->nranks);
    for (int i = 0; files && i < job->nfiles; i++) {
        const tether__param_row *var = &tether__params[job->files[i].var];
        rc |= env_add(out, var->name, "%s", job->files[i].path);
        rc |= env_add(out, var->aliases[0], "%s", job->files[i].path);
    }
    rc |= env_add(out, TETHER__VAR(JOB_TOKEN), "%s", job->token);
    if (job->backend)
        rc |= env_add(out, TETHER__VAR(BACKEND), "%s", job->backend);
    if (o->timeout_set)
        rc |= env_add(out, TETHER__VAR(TIMEOUT), "%ld", o->timeout_s);
    if (o->verbose)
        rc |= env_add(out, TETHER__VAR(VERBOSE), "1");
    rc |= env_add(out, TETHER__ALIAS(RANK, 0), "%d", rank);
    rc |= env_add(out, TETHER__ALIAS(SIZE, 0), "%d", job->nranks);
    if (job->backend && strcmp(job->backend, "rdma") == 0)
        rc |= env_add(out, TETHER__ALIAS(COORDINATOR, 0), "%s:%d", job->master_addr,
                      job->master_port);
    if (o->verbose)
        rc |= env_add(out, TETHER__ALIAS(VERBOSE, 0), "1");
    /* torchrun's names (the rows' last aliases), so unchanged torch.distributed scripts find their
     * rank and rendezvous. */
    rc |= env_add(out, tether__master_addr, "%s", job->master_addr);
    rc |= env_add(out, tether__master_port, "%d", job->master_port);
    rc |= env_add(out, TETHER__ALIAS(RANK, 1), "%d", rank);
    rc |= env_add(out, TETHER__ALIAS(SIZE, 1), "%d", job->nranks);
    rc |= env_add(out, "LOCAL_RANK", "%d", rank % job->ranks_per_host);
    rc |= env_add(out, "LOCAL_WORLD_SIZE", "%d", job->ranks_per_host);
    for (int i = 0; i < job->hosts.nenvs; i++)
        rc |= env_add_kv(out, job->hosts.envs[i]);
    for (int i = 0; i < o->nenvs; i++)
        rc |= env_add_kv(out, o->envs[i]);
    if (rc) {
        tether__launch_say("out of memory building rank %d's environment", rank);
        tether__envlist_free(out);
        return -1;
    }
    return 0;
}

void tether__envlist_free(tether__envlist *e)
{
    for (int i = 0; i < e->n; i++)
        free(e->kv[i]);
    free(e->kv);
    memset(e, 0, sizeof *e);
}
