/* config_tool/ssh_run.c - one ssh session per host, all at once, each under a deadline. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config_tool/config_tool.h"
#include "config_tool/ssh_run.h"
#include "tools/ssh_command.h"

#define CT_OUTPUT_MAX (16u << 20) /* a probe answers in kilobytes; stop a runaway remote */

/* A growing buffer for one stream of one session. */
typedef struct stream {
    int fd;
    char *buf;
    size_t len, cap;
} stream;

typedef struct child {
    pid_t pid;
    stream out, err;
    int exited;
} child;

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Start argv in its own process group (so a timeout kills ssh and whatever it started), stdin
 * from /dev/null, stdout and stderr into pipes. */
static pid_t spawn(char *const *argv, int *out_fd, int *err_fd)
{
    int po[2], pe[2];
    pid_t pid;

    if (pipe(po) != 0)
        return -1;
    if (pipe(pe) != 0) {
        close(po[0]);
        close(po[1]);
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        setpgid(0, 0);
        dup2(devnull, 0);
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(pe[0]);
        execvp(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    if (pid < 0) {
        close(po[0]);
        close(pe[0]);
        return -1;
    }
    *out_fd = po[0];
    *err_fd = pe[0];
    return pid;
}

/* Read what is there; close the stream at EOF, error or the size limit. */
static void drain(stream *s)
{
    if (s->cap - s->len < 4096) {
        size_t ncap = s->cap ? s->cap * 2 : 16384;
        char *nb = ncap <= CT_OUTPUT_MAX ? realloc(s->buf, ncap + 1) : NULL;
        if (!nb) {
            close(s->fd);
            s->fd = -1;
            return;
        }
        s->buf = nb;
        s->cap = ncap;
    }
    ssize_t got = read(s->fd, s->buf + s->len, s->cap - s->len);
    if (got > 0) {
        s->len += (size_t)got;
    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(s->fd);
        s->fd = -1;
    }
}

/* Poll every open pipe until all are closed or the deadline passes. */
static void pump(child *kids, int n, long deadline)
{
    struct pollfd pfd[2 * CT_MAX_HOSTS];
    stream *owner[2 * CT_MAX_HOSTS];

    for (;;) {
        int np = 0;
        for (int i = 0; i < n; i++) {
            stream *ss[2] = {&kids[i].out, &kids[i].err};
            for (int k = 0; k < 2; k++)
                if (ss[k]->fd >= 0) {
                    pfd[np] = (struct pollfd){.fd = ss[k]->fd, .events = POLLIN};
                    owner[np++] = ss[k];
                }
        }
        long left = deadline - now_ms();
        if (np == 0 || left <= 0)
            return;
        if (poll(pfd, (nfds_t)np, (int)left) < 0 && errno != EINTR)
            return;
        for (int k = 0; k < np; k++)
            if (pfd[k].revents)
                drain(owner[k]);
    }
}

/* Reap every child; what is still running at the deadline is killed with its group. A child
 * that closed its pipes is about to exit, so the short sleeps below end almost at once. */
static void reap(child *kids, int n, long deadline, ct_session *sessions)
{
    const struct timespec nap = {0, 20 * 1000000L};

    for (int i = 0; i < n; i++) {
        pid_t done = 0;
        int st = 0;
        if (kids[i].pid <= 0)
            continue;
        while ((done = waitpid(kids[i].pid, &st, WNOHANG)) == 0 && now_ms() < deadline)
            nanosleep(&nap, NULL);
        if (done == 0) {
            kill(-kids[i].pid, SIGKILL);
            waitpid(kids[i].pid, &st, 0);
            sessions[i].timed_out = 1;
            sessions[i].status = -1;
        } else {
            sessions[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
    }
}

static char *take(stream *s)
{
    char *b = s->buf ? s->buf : malloc(1);

    if (b)
        b[s->len] = '\0';
    if (s->fd >= 0)
        close(s->fd);
    return b;
}

int ct_ssh_run_all(const char *ssh_command, const char *const *hosts, const char *const *commands,
                   int n, int timeout_s, ct_session *sessions)
{
    child kids[CT_MAX_HOSTS];
    char shell_cmd[TETHER__SSH_COMMAND_MAX + 16], *argv[TETHER__SSH_ARGC];
    int started = 0;
    long deadline;

    memset(kids, 0, sizeof kids);
    for (int i = 0; i < n; i++) {
        memset(&sessions[i], 0, sizeof sessions[i]);
        tether__ssh_argv(argv, shell_cmd, sizeof shell_cmd, ssh_command, hosts[i], commands[i]);
        kids[i].out.fd = kids[i].err.fd = -1;
        kids[i].pid = spawn(argv, &kids[i].out.fd, &kids[i].err.fd);
        if (kids[i].pid < 0)
            sessions[i].status = -1;
        else
            started++;
    }
    deadline = now_ms() + timeout_s * 1000L;
    pump(kids, n, deadline);
    reap(kids, n, deadline, sessions);
    for (int i = 0; i < n; i++) {
        sessions[i].out = take(&kids[i].out);
        sessions[i].err = take(&kids[i].err);
    }
    return started ? 0 : -1;
}

void ct_session_free(ct_session *s)
{
    free(s->out);
    free(s->err);
    s->out = s->err = NULL;
}

void ct_session_error(const ct_session *s, int timeout_s, char *buf, size_t len)
{
    const char *text = s->err ? s->err : "", *end = text + strlen(text), *start;

    if (s->timed_out) {
        snprintf(buf, len, "no answer within %d s (is the host up? pass --timeout to wait longer)",
                 timeout_s);
        return;
    }
    /* ssh puts its reason on the last line of stderr. */
    while (end > text && (end[-1] == '\n' || end[-1] == '\r'))
        end--;
    for (start = end; start > text && start[-1] != '\n'; start--)
        ;
    if (end > start)
        snprintf(buf, len, "%.*s", (int)(end - start), start);
    else
        snprintf(buf, len, "ssh exited with status %d and said nothing", s->status);
}
