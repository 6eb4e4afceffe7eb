/* launcher/spawn.c - start one process for a rank: its own process group, its environment, and
 * stdin/stdout/stderr pipes to the launcher. Both spawners (local, ssh) start processes here. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bind.h"
#include "core/platform.h"
#include "job.h"
#include "launch_env.h"
#include "launch_say.h"
#include "rank_output.h"
#include "signals.h"
#include "spawn.h"

/* One pipe, both ends close-on-exec (the child gets its end by dup2), ours non-blocking for
 * poll(). ours is 0 for the read end, 1 for the write end. */
static int make_pipe(int fds[2], int ours)
{
    if (pipe(fds) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        if (fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0)
            return -1;
    }
    return fcntl(fds[ours], F_SETFL, fcntl(fds[ours], F_GETFL) | O_NONBLOCK);
}

static void close_pipe(int fds[2])
{
    for (int i = 0; i < 2; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
        fds[i] = -1;
    }
}

/* In the child: the exit mark's write end onto TETHER__EXIT_MARK_FD (or the highest descriptor
 * allowed), kept across exec. Without room for it the mark closes at exec, which the exit order
 * sees to say nothing (the rank is not exiting). */
static void hold_exit_mark(int mark)
{
    struct rlimit lim;
    int fd = TETHER__EXIT_MARK_FD;
    if (mark < 0)
        return;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
        lim.rlim_cur <= (rlim_t)fd)
        fd = (int)lim.rlim_cur - 1;
    if (fd > 2)
        dup2(mark, fd);
}

/* In the child: become the leader of a new process group (so the whole tree can be signalled
 * and Ctrl-C reaches only the launcher), take the pipes as 0/1/2 and the exit mark (-1: none),
 * run on its CPUs (cpus: NULL leaves that to the system), move to cwd, add the environment, exec.
 * The launcher is single-threaded, so the C library is safe to use here. Never returns. */
static void run_child(int rank, char *const argv[], const tether__envlist *env, const char *cwd,
                      const tether__cpu_share *cpus, int in[2], int out[2], int err[2], int mark)
{
    tether__signals_child_reset();
    setpgid(0, 0);
    if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
        _exit(127);
    hold_exit_mark(mark);
    if (cpus)
        tether__bind_child(rank, cpus);
    if (cwd && chdir(cwd) != 0) {
        dprintf(2, "tether launch: rank %d: --cwd %s: %s\n", rank, cwd, strerror(errno));
        _exit(127);
    }
    for (int i = 0; env && i < env->n; i++)
        putenv(env->kv[i]);
    execvp(argv[0], argv);
    dprintf(2, "tether launch: rank %d: cannot run '%s': %s\n", rank, argv[0], strerror(errno));
    _exit(127);
}

int tether__spawn_process(const tether__job *job, tether__rank_proc *p, char *const argv[],
                          const tether__envlist *env, const char *cwd,
                          const tether__cpu_share *cpus)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, mark[2] = {-1, -1};
    pid_t pid;
    /* Only where exit_order.c reads it; an ssh client closes what it inherits as it starts. */
    int want_mark = TETHER__LINUX && !p->host;
    p->mark_fd = -1;
    if (make_pipe(in, 1) != 0 || make_pipe(out, 0) != 0 || make_pipe(err, 0) != 0 ||
        (want_mark && make_pipe(mark, 0) != 0)) {
        tether__launch_say("rank %d: cannot make its pipes: %s", p->rank, strerror(errno));
        goto fail;
    }
    tether__signals_block();
    pid = fork();
    if (pid == 0)
        run_child(p->rank, argv, env, cwd, cpus, in, out, err, mark[1]);
    if (pid > 0)
        setpgid(pid, pid); /* also here: signals may be sent before the child ran setpgid */
    tether__signals_unblock();
    if (pid < 0) {
        tether__launch_say("rank %d: fork failed: %s", p->rank, strerror(errno));
        goto fail;
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    if (want_mark)
        close(mark[1]);
    p->pid = pid;
    p->in_fd = in[1];
    p->mark_fd = mark[0];
    tether__out_init(&p->out, out[0], 1, p->rank, job->opts->prefix);
    tether__out_init(&p->err, err[0], 2, p->rank, job->opts->prefix);
    return 0;
fail:
    close_pipe(in);
    close_pipe(out);
    close_pipe(err);
    close_pipe(mark);
    return -1;
}
