/* launcher/launch.h - the parts of `tether launch` and how they meet: options, job plan, rank
 * environment, rank spawners, output lines, stdin broadcast, signals and the supervisor.
 *
 * Flow: parse options -> plan the job (hosts, ports, token, the per-rank hostfile in a private
 * temp dir) -> the guard is forked, to kill the ranks if the launcher dies (guard.c) -> a spawner
 * (local, or ssh) starts each rank with its environment and three pipes ->
 * the supervisor polls the pipes, the launcher's stdin and its signals until every rank is gone
 * -> the plan is removed.
 * Each part lives in its own file; only the spawner knows whether a rank is local or remote.
 */
#ifndef TETHER_LAUNCHER_LAUNCH_H
#define TETHER_LAUNCHER_LAUNCH_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/clock.h" /* tether__now_ms, as every wait of the library */
#include "core/errors.h"
#include "hostfile/hostfile.h"
#include "tools/say.h"
#include "tools/strbuf.h"

#define TETHER_LAUNCH_MAX_RANKS 4096
#define TETHER_LAUNCH_GRACE_MS 3000 /* SIGTERM -> SIGKILL */
#define TETHER_LAUNCH_TOKEN_BYTES 16

/* Exit statuses of the command itself (a job's status is its first failing rank's). */
#define TETHER_LAUNCH_EXIT_FAILED 1 /* could not set the job up */
#define TETHER_LAUNCH_EXIT_USAGE 2  /* bad command line */

/* ---- options (launch_args.c) ---- */

typedef struct tether__launch_opts {
    int nranks;              /* -n: local ranks, or ranks per host; 0 when not given */
    const char *hosts;       /* --hosts h1,h2; NULL when not given */
    const char *hostfile;    /* --hostfile; NULL when not given */
    const char *ssh_command; /* --ssh-command, run by sh with the host and command appended */
    const char *cwd;         /* --cwd; NULL: the launcher's cwd where it exists, else home */
    const char *backend;     /* --backend; NULL when not given */
    int nenvs;
    char **envs;        /* --env K=V, in order (points into argv) */
    int prefix;         /* --prefix: "[rank] " before every line */
    int verbose;        /* --verbose */
    int starting_port;  /* --starting-port; 0: free ports picked by the system */
    int conns_per_ip;   /* --connections-per-ip, >= 1 */
    long timeout_s;     /* --timeout */
    int timeout_set;    /* --timeout was given (0 is a value: heartbeats only) */
    const char *python; /* --python; NULL: python3 on the rank's PATH */
    int print_python;   /* --print-python: say which Python and exit */
    int no_verify;      /* --no-verify-script */
    int bind;           /* --bind: TETHER__BIND_SPREAD (default) or TETHER__BIND_NONE */
    char **cmd;         /* PROGRAM ARGS..., NULL-terminated (points into argv, or python_cmd) */
    char **python_cmd;  /* PYTHON PROGRAM.py ARGS... for a .py PROGRAM (malloc'd), else NULL */
} tether__launch_opts;

/* 0: options read; 1: help was printed (exit 0); 2: bad usage, message printed (exit 2). Free
 * o->envs and o->python_cmd after either. */
int tether__launch_parse(int argc, char **argv, tether__launch_opts *o);
/* The Python a .py PROGRAM runs with: --python, else "python3". */
const char *tether__launch_python(const tether__launch_opts *o);

/* Print "tether launch: <message>\n" on stderr (tools/say.h). Every launcher message goes through
 * it. */
#define tether__launch_say(...) tether__say("tether launch", __VA_ARGS__)

/* ---- CPU binding of the ranks on this machine (bind.c) ---- */

enum { TETHER__BIND_SPREAD, TETHER__BIND_NONE };

/* A rank's CPUs: [first, first + count) of the launcher's allowed CPUs, in order. */
typedef struct tether__cpu_share {
    int first, count;
} tether__cpu_share;

/* --bind's value: TETHER__BIND_SPREAD for "spread", TETHER__BIND_NONE for "none", else -1. */
int tether__bind_parse(const char *text);

/* ---- the job plan (launch_plan.c, launch_hosts.c): one per job ---- */

#define TETHER_LAUNCH_DEFAULT_PORT 5000 /* first port when a host is remote (mlx.launch's) */
#define TETHER_LAUNCH_MAX_FILES 2

/* A file every rank needs (the per-rank hostfile, the RDMA device matrix). Local ranks read the
 * copy in the job's temp dir; a remote rank gets the text in its command and writes its own. */
typedef struct tether__job_file {
    const char *env;     /* the variable that tells ranks its path: "TETHER_HOSTFILE" */
    const char *mlx_env; /* MLX's name for it, set too: "MLX_HOSTFILE" */
    const char *name;    /* file name: "hostfile.json" */
    char path[PATH_MAX]; /* the local copy */
    char *text;          /* its contents */
} tether__job_file;

typedef struct tether__job {
    const tether__launch_opts *opts;
    tether_launch_hosts hosts; /* where ranks run; a local job has one host: this machine */
    int *host_local;           /* per host: 1 when it is this machine (started without ssh) */
    int nranks;
    int ranks_per_host;      /* rank r runs on host r / ranks_per_host */
    const char *backend;     /* --backend, else the hostfile's, else NULL */
    tether_rank_hosts addrs; /* what every rank listens on: the per-rank hostfile */
    int nfiles;
    tether__job_file files[TETHER_LAUNCH_MAX_FILES];
    char tmpdir[PATH_MAX - 32]; /* private, mode 0700; "" until made (room for a file name) */
    char cwd[PATH_MAX];         /* the launcher's working directory ("" if unknown) */
    char token[2 * TETHER_LAUNCH_TOKEN_BYTES + 1];
    char master_addr[TETHER_HOST_MAX];
    int master_port;
} tether__job;

/* Hosts, ports, token, temp dir and files. On failure prints why and returns -1; call
 * tether__job_cleanup either way. */
int tether__job_plan(tether__job *job, const tether__launch_opts *o);
/* Remove the temp dir and free the plan; safe on a zeroed or half-made job. */
void tether__job_cleanup(tether__job *job);
/* Fill job->hosts and job->host_local from --hostfile, --hosts, or this machine. */
int tether__job_hosts(tether__job *job);
/* Write the job's files into its temp dir (the per-rank hostfile; the RDMA device matrix when
 * the backend is rdma and the hosts list devices) and keep their text. */
int tether__job_files(tether__job *job);
/* 1 if a host of the launcher hostfile lists RDMA devices ("rdma"): MLX's JACCL hostfiles, which
 * need no "backend" to mean rdma. */
int tether__job_lists_rdma(const tether__job *job);
/* 1 if an ssh destination is this machine (see launch_hosts.c for the rule). */
int tether__host_is_local(const char *ssh);
/* The host rank r runs on. */
static inline int tether__rank_host(const tether__job *job, int r)
{
    return r / job->ranks_per_host;
}
/* Rank r's CPUs when --bind spread binds it (a rank started on this machine, with others here):
 * 1 and *out set (said with --verbose), else 0. */
int tether__bind_plan(const tether__job *job, int rank, tether__cpu_share *out);
/* In rank's child, before exec: run only on its share (a failure is said on its stderr). */
void tether__bind_child(int rank, const tether__cpu_share *share);

/* The remote rank's script part that sets $tb to the command prefix running the program on its
 * share of its host's CPUs ("" when not bound). */
void tether__bind_remote(const tether__job *job, int rank, tether__strbuf *b);

/* ---- a rank's environment (launch_env.c) ---- */

typedef struct tether__envlist {
    int n, cap;
    char **kv; /* "NAME=value", malloc'd */
} tether__envlist;

/* The variables rank r gets on top of the launcher's own environment (a remote rank gets only
 * these): TETHER_*, MLX_*, torchrun's, the hostfile's "envs", then --env, so the user wins. files:
 * 1 to add each job file's variable with its local path (a remote rank sets those itself). */
int tether__rank_env(const tether__job *job, int rank, int files, tether__envlist *out);
void tether__envlist_free(tether__envlist *e);
/* 1 if kv is NAME=VALUE with NAME a shell variable name (letters, digits, '_', no leading digit):
 * remote ranks get `export NAME=...`, so nothing else may pass. */
int tether__env_name_ok(const char *kv);

/* ---- output lines (rank_output.c) ---- */

#define TETHER_LINE_MAX (1u << 20) /* a longer line is cut into pieces of this size */

/* A look at each line before it goes out (without its newline); 1 swallows it. */
typedef int (*tether__line_filter)(void *ctx, const char *line, size_t len);

typedef struct tether__out_stream {
    int fd;   /* read end of the rank's pipe; -1 after EOF */
    int sink; /* 1 or 2: where whole lines go */
    int rank;
    int prefix;                 /* add "[rank] " */
    tether__line_filter filter; /* NULL: every line goes out; it sees whole lines only */
    void *filter_ctx;
    const char *keep_whole; /* unfinished lines starting with this wait for their newline */
    char *buf;              /* bytes of an unfinished line */
    size_t len, cap;
    long long last_read_ms; /* when bytes last came (monotonic) */
} tether__out_stream;

/* An unfinished line (a prompt) is passed on once its rank has written nothing more for this
 * long; lines of other ranks then start on a fresh line, so no two ranks share one. */
#define TETHER_PARTIAL_QUIET_MS 100

void tether__out_init(tether__out_stream *s, int fd, int sink, int rank, int prefix);
/* Read what the pipe has now (non-blocking) and pass whole lines on (an unfinished one waits for
 * tether__out_tick). Returns 1 while open, 0 after EOF (the partial last line is then flushed
 * with a newline and fd closed). all: keep
 * reading until the pipe is empty, else one read. */
int tether__out_pump(tether__out_stream *s, int all);
/* Flush the partial line and close the pipe, without waiting for EOF. */
void tether__out_close(tether__out_stream *s);
/* When s's unfinished line is due to be passed on (monotonic ms), or -1 when it has none. */
long long tether__out_due_ms(const tether__out_stream *s);
/* Pass s's unfinished line on if it is due at now_ms (see TETHER_PARTIAL_QUIET_MS). */
void tether__out_tick(tether__out_stream *s, long long now_ms);

/* ---- stdin broadcast (stdin_bcast.c) ---- */

typedef struct tether__bcast {
    int src; /* the launcher's stdin; -1 after EOF or error */
    int n;
    int *fds;    /* write end of each rank's stdin pipe; -1 once closed */
    size_t *off; /* how much of buf each rank has taken */
    size_t len;  /* bytes in buf */
    char buf[1 << 16];
} tether__bcast;

int tether__bcast_init(tether__bcast *b, int src, int n);
void tether__bcast_free(tether__bcast *b);
/* 1 when every open rank has the current chunk, so the next one may be read. */
int tether__bcast_wants_read(const tether__bcast *b);
/* 1 when rank i still has bytes of the current chunk to take. */
int tether__bcast_wants_write(const tether__bcast *b, int i);
void tether__bcast_read(tether__bcast *b);
void tether__bcast_write(tether__bcast *b, int i);
void tether__bcast_close(tether__bcast *b, int i);

/* ---- signals (signals.c) ---- */

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

/* ---- the guard (guard.c): the ranks die with the launcher ---- */

/* Fork the guard, before the first rank (a warning, and no guard, if that fails); it removes
 * job's temp dir too if the launcher dies. */
void tether__guard_start(tether__job *job);
/* Rank process group pgid (a local rank, or a remote rank's ssh client) dies with the launcher. */
void tether__guard_add(pid_t pgid);
/* Remote rank's group (kill target "-PGID" on its host, temp dir dir) is stopped through ssh. */
void tether__guard_add_remote(int rank, const char *target, const char *dir);
/* The job is over: the guard exits, killing nothing. */
void tether__guard_end(void);

/* ---- ranks and spawners (spawn_local.c; ssh later) ---- */

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

/* ---- kill commands through ssh (ssh_helpers.c) ---- */

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

/* Start argv for rank p (spawn.c): own process group, pipes as its 0/1/2 (p->in_fd, p->out,
 * p->err), env added to ours (NULL: none), in cwd (NULL: ours). On Linux a rank on this machine
 * (p->host NULL) also gets its exit mark (p->mark_fd, see exit_order.c). 0, or -1 after saying
 * why. */
int tether__spawn_process(const tether__job *job, tether__rank_proc *p, char *const argv[],
                          const tether__envlist *env, const char *cwd,
                          const tether__cpu_share *cpus);

/* The command a remote rank runs under ssh (remote_script.c): a POSIX sh script that writes the
 * job's files into a private temp dir, enters the working directory, sets the environment, says
 * "TETHER_REMOTE_MARK <kill target> <temp dir>" on stderr, runs the program, removes the temp dir
 * and exits with the program's status. malloc'd, NULL after saying why. */
#define TETHER_REMOTE_MARK "@@tether-remote"
/* The descriptor a rank on this machine holds its exit mark on (Linux): a pipe's write end, high
 * so that the kernel releases it before the rank's sockets when the rank exits (exit_order.c),
 * yet under the usual limit of 1024 descriptors (with a lower limit, the highest allowed). */
#define TETHER_EXIT_MARK_FD 1023
char *tether__remote_script(const tether__job *job, int rank);

enum { TETHER_STOP_NONE, TETHER_STOP_TERM, TETHER_STOP_KILL };

struct tether__rank_proc {
    int rank;
    const tether__spawner *spawner;
    char where[TETHER_HOST_MAX + 4]; /* "" on this machine, else " on HOST", for messages */
    const char *host;                /* ssh destination; NULL on this machine */
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

/* The order the ranks' processes ended in (exit_order.c): on Linux from the kernel (their exit
 * marks', output pipes' hang-ups and pidfds in one epoll set), whatever order waitpid reports them
 * in; elsewhere
 * the order waitpid reaped them in. note sets exit_seq of every rank that ended since the last
 * call (call it before closing a rank's pipes, and after reaping); ranks it cannot order keep 0. */
typedef struct tether__exit_order {
    int epfd;
    int n; /* ranks */
    unsigned long long next;
} tether__exit_order;

void tether__exit_order_open(tether__exit_order *o, tether__rank_proc *ranks, int n);
void tether__exit_order_note(tether__exit_order *o, tether__rank_proc *ranks);
void tether__exit_order_close(tether__exit_order *o, tether__rank_proc *ranks, int n);

/* ---- supervisor (supervise.c) ---- */

/* Run until every rank is gone; returns the job's exit status: 0 only if every rank exited 0;
 * else the first failing rank's status (128+signal for a signal), or 128+sig when the launcher
 * itself got signal sig. sigfd is tether__signals_install()'s pipe. failed >= 0 means the job
 * has failed already with that status (a later rank could not start): every rank is stopped at
 * once and failed is returned. */
int tether__supervise(tether__rank_proc *ranks, int n, tether__bcast *in, int sigfd, int failed);

#endif
