/* core/fork.h - telling a forked child from the process that formed a world (core/fork.c). */
#ifndef TETHER_CORE_FORK_H
#define TETHER_CORE_FORK_H

/* How many fork()s made this process from the one that loaded libtether (a pthread_atfork handler
 * counts them in the child), so telling a forked child costs a load, not getpid()'s system call
 * (about 110 ns, as much as a whole size-1 collective) on every call. */
extern unsigned tether__forks;

/* Start counting (once per process; every later call does nothing): before the first world forms.
 */
void tether__forks_watch(void);

#endif
