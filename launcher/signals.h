/* launcher/signals.h - the launcher's signals, caught into a self-pipe (signals.c). */
#ifndef TETHER_LAUNCHER_SIGNALS_H
#define TETHER_LAUNCHER_SIGNALS_H

/* Catch SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT into a self-pipe; ignore SIGPIPE (a closed
 * pipe is an error code, not death) and SIGTTIN (reading stdin from the background gives EIO,
 * taken as EOF). Returns the pipe's read end for poll(), or -1 with a message. */
int tether__signals_install(void);
/* Next caught signal number, 0 when none is pending. */
int tether__signals_next(void);
/* Block the caught signals around fork() so no handler runs in a child; unblock after. */
void tether__signals_block(void);
void tether__signals_unblock(void);
/* In a forked child: the dispositions and mask the launcher started with. */
void tether__signals_child_reset(void);
/* Put back what install changed and close the pipe. */
void tether__signals_restore(void);

#endif
