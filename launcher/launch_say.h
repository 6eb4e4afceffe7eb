/* launcher/launch_say.h - how the launcher's commands report: their messages on stderr and the
 * statuses they exit with. */
#ifndef TETHER_LAUNCHER_LAUNCH_SAY_H
#define TETHER_LAUNCHER_LAUNCH_SAY_H

#include "tools/say.h"

/* Exit statuses of the command itself (a job's status is its first failing rank's). */
#define TETHER__LAUNCH_EXIT_FAILED 1 /* could not set the job up */
#define TETHER__LAUNCH_EXIT_USAGE 2  /* bad command line */

/* Print "tether launch: <message>\n" on stderr (tools/say.h). Every launcher message goes through
 * it. */
#define tether__launch_say(...) tether__say("tether launch", __VA_ARGS__)

#endif
