/* launcher/spawn.h - a rank's processes and the spawners that start and signal them (spawn.c,
 * spawn_local.c, spawn_ssh.c). */
#ifndef TETHER_LAUNCHER_SPAWN_H
#define TETHER_LAUNCHER_SPAWN_H

#include <sys/types.h>

#include "bind.h"
#include "hostfile/hostfile.h"
#include "job.h"
#include "launch_env.h"
#include "rank_output.h"

#define TETHER__LAUNCH_GRACE_MS 3000 /* SIGTERM -> SIGKILL */

typedef struct tether__rank_proc tether__rank_proc;

/* How a rank's processes are started and signalled; the supervisor knows nothing else of them. */
typedef struct tether__spawner {
    const char *name; /* "local" */
    /* Start rank r: fill p->pid (the local child to reap), p->in_fd and the two output fds.
     * 0, or -1 after printing why. */
    int (*start)(const tether__job *job, int rank, tether__rank_proc *p);
    /* Send sig to every process of the rank (its whole tree); sig 0 probes (the supervisor
     * probes a stopping rank on every wake-up). 0 if some process got it or will, -1 when none
     * is left. When a SIGTERM takes time to arrive (ssh), it may move p->kill_at_ms later. */
    int (*signal)(tether__rank_proc *p, int sig);
} tether__spawner;

extern const tether__spawner tether__spawn_local;
extern const tether__spawner tether__spawn_ssh;

/* Start argv for rank p (spawn.c): own process group, pipes as its 0/1/2 (p->in_fd, p->out,
 * p->err), env added to ours (NULL: none), in cwd (NULL: ours). On Linux a rank on this machine
 * (p->host NULL) also gets its exit mark (p->mark_fd, see exit_order.c). 0, or -1 after saying
 * why. */
int tether__spawn_process(const tether__job *job, tether__rank_proc *p, char *const argv[],
                          const tether__envlist *env, const char *cwd,
                          const tether__cpu_share *cpus);

/* The descriptor a rank on this machine holds its exit mark on (Linux): a pipe's write end, high
 * so that the kernel releases it before the rank's sockets when the rank exits (exit_order.c),
 * yet under the usual limit of 1024 descriptors (with a lower limit, the highest allowed). */
#define TETHER__EXIT_MARK_FD 1023

enum { TETHER__STOP_NONE, TETHER__STOP_TERM, TETHER__STOP_KILL };

struct tether__rank_proc {
    int rank;
    const tether__spawner *spawner;
    char where[TETHER__HOST_MAX + 4]; /* "" on this machine, else " on HOST", for messages */
    const char *host;                 /* ssh destination; NULL on this machine */
    char remote_kill[24]; /* remote kill target ("-PGID") once the script said it; "" before */
    char remote_dir[256]; /* the remote temp dir, removed after a SIGKILL */
    pid_t term_helper;    /* the kill command carrying SIGTERM there, while it runs */
    pid_t pid;            /* local child: the rank itself, or its ssh client */
    int in_fd;            /* write end of its stdin (handed to the broadcast) */
    tether__out_stream out, err;
    int waited;      /* pid has been waited for: wstatus holds its fate */
    int ended_alone; /* ...and it ended before the supervisor told it to stop */
    int reaped;      /* ...and the supervisor has dealt with it */
    int wstatus;
    int pidfd;                   /* Linux: its pidfd in the exit order's set, else -1 */
    int mark_fd;                 /* Linux, on this machine: its exit mark's read end, else -1 */
    unsigned long long exit_seq; /* 1, 2, ...: its place in the order the ranks ended; 0 unknown */
    long long ended_ms;          /* when the order noted it */
    int stop;                    /* TETHER_STOP_*: how far stopping it has gone */
    long long kill_at_ms;        /* monotonic time of SIGKILL once SIGTERM was sent */
};

#endif
