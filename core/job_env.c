/* core/job_env.c - a job that the environment announces (its rank and size variables) but gives no
 * way to reach: an error naming what is set and what is missing, never a quiet group of size 1.
 *
 * What announces a job: tether's and MLX's rank and size variables (set by launchers, not by
 * anything else), a size above 1 under any of its names (torchrun's WORLD_SIZE included), or an
 * RDMA device matrix. torchrun's other generic names (RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT)
 * alone announce nothing: they turn up in environments for other reasons. A size of 1 is a
 * complete configuration: the singleton. docs/env.md says the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "errors.h"
#include "params.h"

static int is_set(const char *name)
{
    const char *v = tether__env_raw(name);
    return v && *v;
}

/* Append ", NAME=value" for a name that is set, or ", NAME is unset" where unset says why. */
static void show(char *set, size_t size, const char *name, int say_unset)
{
    size_t used = strlen(set);
    if (is_set(name))
        snprintf(set + used, size - used, "%s%s=%s", used ? ", " : "", name, tether__env_raw(name));
    else if (say_unset)
        snprintf(set + used, size - used, "%s%s is unset", used ? ", " : "", name);
}

static void show_row(char *set, size_t size, tether__param id)
{
    const tether__param_row *r = &tether__params[id];
    show(set, size, r->name, 0);
    for (int k = 0; r->aliases[k]; k++)
        show(set, size, r->aliases[k], 0);
}

int tether__config_job_check(const tether__config *cfg)
{
    if (cfg->hostfile || cfg->coordinator) /* the backends judge those */
        return TETHER_OK;
    if (cfg->size == 1) {
        if (cfg->rank > 0)
            return tether__fail(TETHER_ECONFIG,
                                "rank %d in a job of size 1 (%s, %s): expected rank 0", cfg->rank,
                                TETHER__VARS(RANK), TETHER__VARS(SIZE));
        return TETHER_OK;
    }
    if (cfg->size < 2 && !is_set(TETHER__VAR(RANK)) && !is_set(TETHER__ALIAS(RANK, 0)) &&
        !cfg->ibv_devices)
        return TETHER_OK;
    /* torchrun's address and port, one without the other named as missing */
    int half = is_set(tether__master_addr) != is_set(tether__master_port);
    char set[512] = "";
    show_row(set, sizeof set, TETHER__P_RANK);
    show_row(set, sizeof set, TETHER__P_SIZE);
    show(set, sizeof set, tether__master_addr, half);
    show(set, sizeof set, tether__master_port, half);
    show_row(set, sizeof set, TETHER__P_IBV_DEVICES);
    return tether__fail(TETHER_ECONFIG,
                        "the environment announces a job (%s) but says nowhere how to reach its "
                        "ranks: set %s or %s, as tether launch does; or unset them to run alone "
                        "as a group of size 1",
                        set, TETHER__VARS(HOSTFILE), TETHER__VARS(COORDINATOR));
}
