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
 * became ready, and a rank's pipes hang up when its descriptors close, sockets included, so the
 * first of its events orders it among the others; the pidfd covers a rank whose pipes some child
 * of it still holds. Elsewhere (macOS) the order is waitpid's: the order the supervisor reaped
 * them. */
#include <stdlib.h>
#include <unistd.h>

#include "core/platform.h"
#include "launch.h"

#if TETHER_LINUX
#include <sys/epoll.h>
#include <sys/syscall.h>

/* fd into the set for rank i: events 0 still reports a hang-up (a pipe's last writer gone). */
static void watch(tether__exit_order *o, int fd, int i, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.u32 = (uint32_t)i};
    if (fd >= 0)
        epoll_ctl(o->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void unwatch(tether__exit_order *o, const tether__rank_proc *p)
{
    const int fds[] = {p->pidfd, p->out.fd, p->err.fd};
    for (int k = 0; k < 3; k++)
        if (fds[k] >= 0)
            epoll_ctl(o->epfd, EPOLL_CTL_DEL, fds[k], NULL);
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
        watch(o, ranks[i].pidfd, i, EPOLLIN);
        watch(o, ranks[i].out.fd, i, 0);
        watch(o, ranks[i].err.fd, i, 0);
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
            tether__rank_proc *p = &ranks[ev[k].data.u32];
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
    for (int i = 0; i < n; i++)
        if (ranks[i].pidfd >= 0) {
            close(ranks[i].pidfd);
            ranks[i].pidfd = -1;
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
