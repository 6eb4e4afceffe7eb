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

/* The variables named in the message when set, in the order a reader looks for them. */
static const char *const shown[] = {
    "TETHER_RANK", "TETHER_SIZE", "MLX_RANK",           "MLX_WORLD_SIZE",  "RANK", "WORLD_SIZE",
    "MASTER_ADDR", "MASTER_PORT", "TETHER_IBV_DEVICES", "MLX_IBV_DEVICES", NULL};

static int is_set(const char *name)
{
    const char *v = tether__env_raw(name);
    return v && *v;
}

int tether__config_job_check(const tether__config *cfg)
{
    if (cfg->hostfile || cfg->coordinator) /* the backends judge those */
        return TETHER_OK;
    if (cfg->size == 1) {
        if (cfg->rank > 0)
            return tether__fail(TETHER_ECONFIG,
                                "rank %d in a job of size 1 (TETHER_RANK or MLX_RANK or RANK, "
                                "TETHER_SIZE or MLX_WORLD_SIZE or WORLD_SIZE): expected rank 0",
                                cfg->rank);
        return TETHER_OK;
    }
    if (cfg->size < 2 && !is_set("TETHER_RANK") && !is_set("MLX_RANK") && !cfg->ibv_devices)
        return TETHER_OK;
    char set[512] = "";
    for (int i = 0; shown[i]; i++)
        if (is_set(shown[i])) {
            size_t used = strlen(set);
            snprintf(set + used, sizeof set - used, "%s%s=%s", used ? ", " : "", shown[i],
                     tether__env_raw(shown[i]));
        }
    const char *hint = is_set("MASTER_ADDR") && !is_set("MASTER_PORT")   ? " (MASTER_PORT is unset)"
                       : is_set("MASTER_PORT") && !is_set("MASTER_ADDR") ? " (MASTER_ADDR is unset)"
                                                                         : "";
    return tether__fail(TETHER_ECONFIG,
                        "the environment announces a job (%s) but says nowhere how to reach its "
                        "ranks: set TETHER_HOSTFILE (or MLX_HOSTFILE) or TETHER_COORDINATOR (or "
                        "MLX_JACCL_COORDINATOR, or MASTER_ADDR with MASTER_PORT%s), as tether "
                        "launch does; or unset them to run alone as a group of size 1",
                        set, hint);
}
