/* launcher/supervise.h - the supervisor: watch a job's ranks until all are gone (supervise.c). */
#ifndef TETHER_LAUNCHER_SUPERVISE_H
#define TETHER_LAUNCHER_SUPERVISE_H

#include "spawn.h"
#include "stdin_bcast.h"

/* Run until every rank is gone; returns the job's exit status: 0 only if every rank exited 0;
 * else the first failing rank's status (128+signal for a signal), or 128+sig when the launcher
 * itself got signal sig. sigfd is tether__signals_install()'s pipe. failed >= 0 means the job
 * has failed already with that status (a later rank could not start): every rank is stopped at
 * once and failed is returned. */
int tether__supervise(tether__rank_proc *ranks, int n, tether__bcast *in, int sigfd, int failed);

#endif
