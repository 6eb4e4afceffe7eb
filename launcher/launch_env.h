/* launcher/launch_env.h - the environment a rank gets (launch_env.c). */
#ifndef TETHER_LAUNCHER_LAUNCH_ENV_H
#define TETHER_LAUNCHER_LAUNCH_ENV_H

#include "job.h"

typedef struct tether__envlist {
    int n, cap;
    char **kv; /* "NAME=value", malloc'd */
} tether__envlist;

/* The variables rank r gets on top of the launcher's own environment (a remote rank gets only
 * these): TETHER_*, MLX_*, torchrun's, the hostfile's "envs", then --env, so the user wins. files:
 * 1 to add each job file's variable with its local path (a remote rank sets those itself). */
int tether__rank_env(const tether__job *job, int rank, int files, tether__envlist *out);
void tether__envlist_free(tether__envlist *e);

#endif
