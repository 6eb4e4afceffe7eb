/* launcher/remote_script.h - the sh script a remote rank runs under ssh (remote_script.c). */
#ifndef TETHER_LAUNCHER_REMOTE_SCRIPT_H
#define TETHER_LAUNCHER_REMOTE_SCRIPT_H

#include "job.h"

/* The command a remote rank runs under ssh (remote_script.c): a POSIX sh script that writes the
 * job's files into a private temp dir, enters the working directory, sets the environment, says
 * "TETHER__REMOTE_MARK <kill target> <temp dir>" on stderr, runs the program, removes the temp dir
 * and exits with the program's status. malloc'd, NULL after saying why. */
#define TETHER__REMOTE_MARK "@@tether-remote"
char *tether__remote_script(const tether__job *job, int rank);

#endif
