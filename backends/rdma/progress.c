/* backends/rdma/progress.c - ring mode's progress thread: forwards and watches while the program is
 * away.
 *
 * A message between distant ranks passes through ranks that may be computing outside tether, and a
 * rank that does not poll its CQs leaves frames unreposted and the sender without credits. So in
 * ring mode one thread per endpoint sleeps in poll() on every device's completion channel, every
 * side channel and a wake pipe, and under the endpoint's mutex moves whatever is ready, as test()
 * does. When the endpoint breaks it tells every peer once (abort on the side channels). The
 * program's threads still move frames in isend/test, but sleep in wait() on a condition variable
 * that the thread (or a test() that moved something) broadcasts, so only one thread takes the
 * channels' events and nobody sleeps through a completion another thread took. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/net/socket.h"
#include "rdma_impl.h"

#define HEARTBEAT_MS 1000 /* the thread's longest sleep: a safety net, not needed for progress */

struct rdma_progress {
    pthread_t thread;
    pthread_cond_t moved; /* ep->events changed */
    int wake[2];          /* pipe: stop */
    int stop;
    int propagated;     /* the break was told to every peer */
    uint64_t signalled; /* ep->events at the last broadcast */
};

/* ep->events as the calling thread's last test() saw it: wait() returns at once when it moved
 * since, so a completion between that test and the wait is never slept through. */
static _Thread_local struct {
    const rdma_ep *ep;
    uint64_t events;
} seen;

void tether__rdma_progress_seen(rdma_ep *ep)
{
    seen.ep = ep;
    seen.events = ep->events;
}

void tether__rdma_progress_signal(rdma_ep *ep)
{
    if (ep->prog && ep->events != ep->prog->signalled) {
        ep->prog->signalled = ep->events;
        pthread_cond_broadcast(&ep->prog->moved);
    }
}

int tether__rdma_progress_wait(rdma_ep *ep, int timeout_ms)
{
    if (!ep->err && timeout_ms > 0 && (seen.ep != ep || seen.events == ep->events)) {
        struct timespec until = tether__cond_deadline(timeout_ms);
        pthread_cond_timedwait(&ep->prog->moved, &ep->mu, &until);
    }
    tether__rdma_progress_seen(ep);
    return TETHER_OK;
}

void tether__rdma_progress_until(rdma_ep *ep, int64_t deadline_ms, int (*done)(rdma_ep *))
{
    while (!ep->err && !done(ep)) {
        int64_t left = deadline_ms - tether__net_now_ms();
        struct timespec until;
        if (left <= 0)
            break;
        until = tether__cond_deadline(left);
        pthread_cond_timedwait(&ep->prog->moved, &ep->mu, &until);
    }
}

/* The poll set: the wake pipe, then (while healthy) every device channel and side channel. */
static int poll_set(rdma_ep *ep, struct pollfd *pfd)
{
    int n = 0;
    pfd[n++] = (struct pollfd){.fd = ep->prog->wake[0], .events = POLLIN};
    if (ep->err)
        return n;
    for (int d = 0; d < ep->ndev; d++)
        pfd[n++] = (struct pollfd){.fd = ep->devs[d].ch->fd, .events = POLLIN};
    for (int p = 0; p < ep->size; p++)
        pfd[n++] = (struct pollfd){.fd = p == ep->rank || ep->peers[p].eof ? -1 : ep->peers[p].fd,
                                   .events = POLLIN};
    return n;
}

static void take_ready(rdma_ep *ep, const struct pollfd *pfd, int n)
{
    char buf[64];
    if (pfd[0].revents)
        while (read(pfd[0].fd, buf, sizeof buf) > 0)
            continue;
    if (n == 1)
        return;
    for (int d = 0; d < ep->ndev; d++)
        if (pfd[1 + d].revents)
            tether__rdma_dev_events(ep, &ep->devs[d]);
    for (int p = 0; p < ep->size; p++)
        if (pfd[1 + ep->ndev + p].revents)
            tether__rdma_side_read(ep, &ep->peers[p], p);
}

static void *run(void *arg)
{
    rdma_ep *ep = arg;
    rdma_progress *pr = ep->prog;
    struct pollfd *pfd = malloc((size_t)(1 + ep->ndev + ep->size) * sizeof *pfd);
    pthread_mutex_lock(&ep->mu);
    if (!pfd)
        tether__rdma_break(ep, TETHER_ENOMEM, "rdma: out of memory for the progress thread");
    while (!pr->stop && pfd) {
        int moved = 0, n, got, poll_errno;
        if (!ep->err)
            tether__rdma_arm(ep, &moved);
        if (ep->err && !pr->propagated) { /* every peer fails now, not at its timeout */
            pr->propagated = 1;
            tether__rdma_side_say(ep, SIDE_ABORT, ep->err, ep->errmsg);
        }
        if (moved || ep->err)
            ep->events++;
        tether__rdma_progress_signal(ep);
        if (moved) /* completions came: frames may have been reposted or freed, look again */
            continue;
        n = poll_set(ep, pfd);
        pthread_mutex_unlock(&ep->mu);
        got = poll(pfd, (nfds_t)n, HEARTBEAT_MS);
        poll_errno = errno;
        pthread_mutex_lock(&ep->mu);
        if (got < 0 && poll_errno != EINTR)
            tether__rdma_break(ep, TETHER_ENET, "rdma: rank %d: poll() in the progress thread: %s",
                               ep->rank, strerror(poll_errno));
        if (got > 0) { /* a bye or abort may have come: close() and waits look again */
            take_ready(ep, pfd, n);
            ep->events++;
        }
    }
    pthread_mutex_unlock(&ep->mu);
    free(pfd);
    return NULL;
}

int tether__rdma_progress_start(rdma_ep *ep)
{
    rdma_progress *pr = calloc(1, sizeof *pr);
    int e;
    if (!pr)
        return tether__fail(TETHER_ENOMEM, "rdma: out of memory for the progress thread");
    if ((e = tether__wake_pipe(pr->wake, "rdma")) < 0) {
        free(pr);
        return e;
    }
    if ((e = tether__cond_init(&pr->moved)) < 0) {
        close(pr->wake[0]);
        close(pr->wake[1]);
        free(pr);
        return e;
    }
    pthread_mutex_lock(&ep->mu);
    ep->prog = pr;
    if ((e = pthread_create(&pr->thread, NULL, run, ep)) != 0)
        pthread_cond_destroy(&pr->moved);
    if (e)
        ep->prog = NULL;
    pthread_mutex_unlock(&ep->mu);
    if (e) {
        close(pr->wake[0]);
        close(pr->wake[1]);
        free(pr);
        return tether__fail(TETHER_ENOMEM, "rdma: starting the progress thread: %s", strerror(e));
    }
    return TETHER_OK;
}

/* Caller holds ep->mu; it is released while the thread is joined. */
void tether__rdma_progress_stop(rdma_ep *ep)
{
    rdma_progress *pr = ep->prog;
    if (!pr)
        return;
    pr->stop = 1;
    if (write(pr->wake[1], "", 1) < 0 && errno != EAGAIN)
        TLOG_WARN("rdma: waking the progress thread: %s", strerror(errno));
    pthread_mutex_unlock(&ep->mu);
    pthread_join(pr->thread, NULL);
    pthread_mutex_lock(&ep->mu);
    ep->prog = NULL;
    pthread_cond_destroy(&pr->moved);
    close(pr->wake[0]);
    close(pr->wake[1]);
    free(pr);
}
