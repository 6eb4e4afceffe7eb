/* launcher/guard.c - the ranks die with the launcher. A launcher killed by SIGKILL cannot stop
 * them itself (they would run on, reparented to init), so a small guard process, forked before
 * the ranks, does: the launcher holds the only write end of a pipe to it and tells it each rank's
 * process group as the rank starts, and a remote rank's kill target once its script said it. When
 * the pipe closes without the word that the job is over, the launcher has died, however it died,
 * and the guard sends SIGKILL to every group: a local rank's whole tree, or a remote rank's ssh
 * client; it then removes the job's temp dir. On its host the script then sees its sshd session
 * gone and stops the rank (remote_script.c); a session shared with other connections (ssh's
 * ControlMaster) lives on, so the guard also stops each remote rank through ssh, as the launcher
 * would have. A pipe rather than Linux's PR_SET_PDEATHSIG: that reaches only the rank's own
 * process, not what it started, and macOS has nothing like it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"
#include "guard.h"
#include "job.h"
#include "launch_say.h"
#include "signals.h"
#include "ssh_helpers.h"

/* Messages, one line each (atomic: under PIPE_BUF): "L <pgid>" a local group, "R <rank> <target>
 * <dir>" a remote rank's kill target and temp dir, "D" the job is over. */
#define GUARD_LINE_MAX 512

static int guard_fd = -1; /* our write end; -1 without a guard */
static pid_t guard_pid = -1;

/* The launcher died: kill what each message named (remote ranks through ssh, waited for). */
static void guard_act(tether__job *job, char *msgs, size_t len)
{
    int nlocal = 0;
    for (char *line = msgs, *end; line < msgs + len; line = end + 1) {
        long pgid;
        int rank, off;
        char target[24];
        end = memchr(line, '\n', (size_t)(msgs + len - line));
        if (!end)
            break;
        *end = '\0';
        if (sscanf(line, "L %ld", &pgid) == 1 && pgid > 0) {
            kill(-(pid_t)pgid, SIGKILL);
            nlocal++;
        } else if (sscanf(line, "R %d %23s %n", &rank, target, &off) == 2 && rank >= 0 &&
                   rank < job->nranks) {
            tether__ssh_end_remote(job, rank, target, line + off);
        }
    }
    tether__launch_say("the launcher died; killed its %d rank%s", nlocal, nlocal == 1 ? "" : "s");
    tether__job_cleanup(job); /* the job's temp dir, which the launcher cannot remove now */
    tether__ssh_helpers_wait();
}

/* The guard: keep the messages until end of file, then act on them unless the job ended. */
static void guard_run(int fd, tether__job *job)
{
    char *msgs = NULL;
    size_t len = 0, cap = 0;
    ssize_t got;
    for (;;) {
        if (cap - len < GUARD_LINE_MAX) {
            char *more = realloc(msgs, cap = cap ? 2 * cap : 4096);
            if (!more)
                break; /* act on what we have */
            msgs = more;
        }
        got = read(fd, msgs + len, cap - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
        if (len >= 2 && memcmp(msgs + len - 2, "D\n", 2) == 0 &&
            (len == 2 || msgs[len - 3] == '\n'))
            _exit(0);
    }
    guard_act(job, msgs, len);
    _exit(0);
}

void tether__guard_start(tether__job *job)
{
    int fds[2];
    if (pipe(fds) != 0 || fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0) {
        tether__launch_say("cannot start the guard (%s): the ranks would outlive a killed launcher",
                           strerror(errno));
        return;
    }
    tether__signals_block();
    guard_pid = fork();
    if (guard_pid == 0) {
        int null = open("/dev/null", O_RDWR);
        tether__signals_child_reset();
        setpgid(0, 0); /* signals meant for the launcher's group (Ctrl-C) leave it be */
        dup2(null, 0);
        dup2(null, 1);
        close(fds[1]);
        guard_run(fds[0], job);
    }
    tether__signals_unblock();
    close(fds[0]);
    if (guard_pid < 0) {
        tether__launch_say("cannot start the guard (fork: %s): the ranks would outlive a killed "
                           "launcher",
                           strerror(errno));
        close(fds[1]);
        return;
    }
    guard_fd = fds[1];
}

static void tell(const char *fmt, ...) TETHER__PRINTF(1, 2);
static void tell(const char *fmt, ...)
{
    char line[GUARD_LINE_MAX];
    va_list ap;
    int n;
    if (guard_fd < 0)
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n <= 0 || n >= (int)sizeof line)
        return;
    if (write(guard_fd, line, (size_t)n) != n) {
        tether__launch_say("the guard is gone (%s): the ranks would outlive a killed launcher",
                           strerror(errno));
        close(guard_fd);
        guard_fd = -1;
    }
}

void tether__guard_add(pid_t pgid)
{
    tell("L %ld\n", (long)pgid);
}

void tether__guard_add_remote(int rank, const char *target, const char *dir)
{
    tell("R %d %s %s\n", rank, target, dir);
}

void tether__guard_end(void)
{
    tell("D\n");
    if (guard_fd < 0)
        return;
    close(guard_fd);
    guard_fd = -1;
    waitpid(guard_pid, NULL, 0); /* quick: it exits on reading that */
}
