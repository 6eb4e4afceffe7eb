/* launcher/ssh_helpers.h - kill commands sent to remote hosts through ssh, in the background
 * (ssh_helpers.c). */
#ifndef TETHER_LAUNCHER_SSH_HELPERS_H
#define TETHER_LAUNCHER_SSH_HELPERS_H

#include <stddef.h>
#include <sys/types.h>

#include "job.h"

#define TETHER__SSH_HELPER_MAX_MS 30000 /* longest a kill command may take to reach its host */

/* Run command on host through ssh_command in the background: stdin and stdout from/to /dev/null,
 * stderr ours so an ssh error shows. Its own process group, so a Ctrl-C meant for the launcher
 * leaves it be. Its pid, or -1 (said). */
pid_t tether__ssh_helper_run(const char *ssh_command, const char *host, const char *command);
/* "; rm -rf 'DIR'" after the n bytes of cmd (size bytes), unless dir is unknown or unquotable. */
void tether__ssh_add_rm_dir(char *cmd, size_t size, int n, const char *dir);
/* Wait (bounded) for the remote kill commands still running, then end them. */
void tether__ssh_helpers_wait(void);
/* For the guard once the launcher died: stop remote rank's group (target, as the script said it)
 * through ssh as the launcher would have, SIGTERM then SIGKILL after the grace period, and remove
 * its temp dir, in one command run in the background (tether__ssh_helpers_wait waits for it). */
void tether__ssh_end_remote(const tether__job *job, int rank, const char *target, const char *dir);

#endif
