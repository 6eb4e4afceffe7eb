/* launcher/guard.h - the guard process: the ranks die with the launcher (guard.c). */
#ifndef TETHER_LAUNCHER_GUARD_H
#define TETHER_LAUNCHER_GUARD_H

#include <sys/types.h>

#include "job.h"

/* Fork the guard, before the first rank (a warning, and no guard, if that fails); it removes
 * job's temp dir too if the launcher dies. */
void tether__guard_start(tether__job *job);
/* Rank process group pgid (a local rank, or a remote rank's ssh client) dies with the launcher. */
void tether__guard_add(pid_t pgid);
/* Remote rank's group (kill target "-PGID" on its host, temp dir dir) is stopped through ssh. */
void tether__guard_add_remote(int rank, const char *target, const char *dir);
/* The job is over: the guard exits, killing nothing. */
void tether__guard_end(void);

#endif
