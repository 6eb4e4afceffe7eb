/* launcher/exit_order.c - the order in which the ranks' processes ended, as the kernel saw it.
 *
 * A rank that dies makes its peers fail within milliseconds, and by the time the supervisor runs
 * (its cores busy with the ranks) several may be dead: waitpid reports them in its own order (the
 * oldest child first on Linux), so a job whose rank 2 was SIGKILLed was blamed on rank 0's
 * follow-on error (2 of 5 tries, 4 ranks in 16 MiB all-reduces on two cores). Times taken when
 * the supervisor, or a thread per rank, gets to run have the same flaw, and so has the order the
 * processes became zombies: the killed rank's sockets close first, but it may be reaped later
 * than peers that noticed and exited within 5 ms. On Linux each rank's output pipes (for their
 * hang-up alone) and its pidfd go into one epoll set: epoll queues descriptors in the order they
 * became ready, so the first of a rank's events orders it among the others; the pidfd covers a
 * rank whose pipes some child of it still holds. But an exiting process's files are released
 * highest descriptor first (each close is queued as task work, and those run last queued first):
 * stdout and stderr go last, after the sockets, and peers that saw those close could exit before
 * (a rank's _exit(5) was blamed on a peer's follow-on exit 1 in 12 of 40 jobs of 8 ranks). So a
 * rank on this machine also holds its exit mark, a pipe's write end on a descriptor above its
 * sockets (TETHER__EXIT_MARK_FD): released first, its hang-up comes before any peer can know.
 * A program that closes the descriptors it inherits (sudo, ssh) closes the mark early; a mark that
 * hangs up while its rank is not exiting is ignored. Elsewhere (macOS) the order is waitpid's: the
 * order the supervisor reaped them. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/platform.h"
#include "exit_order.h"
#include "spawn.h"

#if TETHER__LINUX
#include <sys/epoll.h>
#include <sys/syscall.h>

#define PF_EXITING 0x4 /* include/linux/sched.h: set as the process starts to exit */

/* fd into the set for rank i: events 0 still reports a hang-up (a pipe's last writer gone). The
 * event's data is the rank, times 2, plus 1 for its exit mark. */
static void watch(tether__exit_order *o, int fd, int i, int mark, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)i * 2 + (uint64_t)mark};
    if (fd >= 0)
        epoll_ctl(o->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void unwatch(tether__exit_order *o, const tether__rank_proc *p)
{
    const int fds[] = {p->pidfd, p->out.fd, p->err.fd, p->mark_fd};
    for (int k = 0; k < 4; k++)
        if (fds[k] >= 0)
            epoll_ctl(o->epfd, EPOLL_CTL_DEL, fds[k], NULL);
}

/* Whether pid has started to exit, or is gone (PF_EXITING in the flags of /proc/PID/stat, the
 * ninth field, counted after the name's closing parenthesis as the name may hold anything). */
static int exiting(pid_t pid)
{
    char path[48], buf[512], state;
    unsigned flags;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[got > 0 ? got : 0] = '\0';
    const char *end = strrchr(buf, ')');
    if (!end || sscanf(end + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) != 2)
        return 1;
    return state == 'Z' || state == 'X' || (flags & PF_EXITING) != 0;
}

void tether__exit_order_open(tether__exit_order *o, tether__rank_proc *ranks, int n)
{
    o->n = n;
    o->next = 0;
    o->epfd = epoll_create1(EPOLL_CLOEXEC);
    for (int i = 0; i < n; i++) {
        ranks[i].exit_seq = 0;
        ranks[i].pidfd = o->epfd < 0 ? -1 : (int)syscall(SYS_pidfd_open, ranks[i].pid, 0);
        if (o->epfd < 0)
            continue;
        watch(o, ranks[i].pidfd, i, 0, EPOLLIN);
        watch(o, ranks[i].out.fd, i, 0, 0);
        watch(o, ranks[i].err.fd, i, 0, 0);
        watch(o, ranks[i].mark_fd, i, 1, 0);
    }
}

void tether__exit_order_note(tether__exit_order *o, tether__rank_proc *ranks)
{
    struct epoll_event ev[64];
    int got;
    if (o->epfd < 0)
        return;
    while ((got = epoll_wait(o->epfd, ev, 64, 0)) > 0) {
        for (int k = 0; k < got; k++) {
            tether__rank_proc *p = &ranks[ev[k].data.u64 / 2];
            if (ev[k].data.u64 % 2 && !exiting(p->pid)) { /* closed by the program itself */
                epoll_ctl(o->epfd, EPOLL_CTL_DEL, p->mark_fd, NULL);
                continue;
            }
            if (!p->exit_seq) {
                p->exit_seq = ++o->next;
                p->ended_ms = tether__now_ms();
            }
            unwatch(o, p); /* noted once, by its first event */
        }
    }
}

void tether__exit_order_close(tether__exit_order *o, tether__rank_proc *ranks, int n)
{
    for (int i = 0; i < n; i++) {
        if (ranks[i].pidfd >= 0)
            close(ranks[i].pidfd);
        if (ranks[i].mark_fd >= 0)
            close(ranks[i].mark_fd);
        ranks[i].pidfd = ranks[i].mark_fd = -1;
    }
    if (o->epfd >= 0)
        close(o->epfd);
    o->epfd = -1;
}

#else

void tether__exit_order_open(tether__exit_order *o, tether__rank_proc *ranks, int n)
{
    o->epfd = -1;
    o->n = n;
    o->next = 0;
    for (int i = 0; i < n; i++) {
        ranks[i].exit_seq = 0;
        ranks[i].pidfd = -1;
    }
}

/* The order of reaping: the supervisor wakes on SIGCHLD, so ranks that end apart are reaped apart
 * (ranks reaped in one pass tie, and go in rank order). */
void tether__exit_order_note(tether__exit_order *o, tether__rank_proc *ranks)
{
    for (int i = 0; i < o->n; i++)
        if (ranks[i].waited && !ranks[i].exit_seq)
            ranks[i].exit_seq = ++o->next;
}

void tether__exit_order_close(tether__exit_order *o, tether__rank_proc *ranks, int n)
{
    (void)o;
    (void)ranks;
    (void)n;
}

#endif
