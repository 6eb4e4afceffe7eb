/* backends/tcp/progress.c - the progress thread: moves bytes while the program is outside tether.
 *
 * On the ring a message between distant ranks passes through ranks that may be busy computing, and
 * a failure must cross the ring even when nobody calls tether. So a threaded endpoint keeps one
 * thread that sleeps in poll() on every socket and a wake pipe, moves whatever is ready under the
 * endpoint's mutex (as test() does), and when the endpoint breaks, aborts it once, which tells
 * every neighbour, which does the same. The program's threads still write and read in isend/test
 * (the short path), but sleep on a condition variable that the thread (or a test() that finished
 * parts of another thread's requests) broadcasts when request parts finish, byes arrive or it
 * breaks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cma.h"
#include "engine_impl.h"
#include "backends/net/socket.h"

#define HEARTBEAT_MS 1000 /* the thread's longest sleep: a safety net, not needed for progress */
#define POLL_STACK 64

struct tether__tcp_progress {
    pthread_t thread;
    pthread_cond_t moved; /* ep->events changed */
    int wake[2];          /* pipe: new bytes queued on a full socket, or stop */
    int stop;
    int propagated;     /* the break was passed on to every neighbour */
    uint64_t signalled; /* ep->events at the last broadcast */
};

/* ep->events as the calling thread's last test() on ep saw it: wait() returns at once when it
 * moved since, so a completion between that test and the wait is never slept through. */
static _Thread_local struct {
    const tether__tcp_ep *ep;
    uint64_t events;
} seen;

void tether__tcp_progress_seen(const tether__tcp_ep *ep)
{
    seen.ep = ep;
    seen.events = ep->events;
}

void tether__tcp_progress_signal(tether__tcp_ep *ep)
{
    if (ep->events != ep->prog->signalled) {
        ep->prog->signalled = ep->events;
        pthread_cond_broadcast(&ep->prog->moved);
    }
}

void tether__tcp_progress_kick(tether__tcp_ep *ep)
{
    /* a full pipe already holds a wake-up, so EAGAIN is fine */
    if (write(ep->prog->wake[1], "", 1) < 0 && errno != EAGAIN)
        TLOG_TRACE("waking the progress thread: %s", strerror(errno));
}

int tether__tcp_progress_wait(tether__tcp_ep *ep, int timeout_ms)
{
    pthread_mutex_lock(&ep->mu);
    if (!ep->err && timeout_ms > 0 && (seen.ep != ep || seen.events == ep->events)) {
        struct timespec until = tether__cond_deadline(timeout_ms);
        if (pthread_cond_timedwait(&ep->prog->moved, &ep->mu, &until) == ETIMEDOUT && !ep->err)
            tether__cma_unblock(ep); /* idle: see cma.h */
    }
    tether__tcp_progress_seen(ep); /* the caller tests next; a wait without one sleeps again */
    pthread_mutex_unlock(&ep->mu);
    /* A break is reported by test(), not here: the thread reads eagerly, so a request whose bytes
     * came in just before another rank's abort is complete and must still report done. */
    return TETHER_OK;
}

/* The poll set: the wake pipe first, then every socket still open while the endpoint is healthy
 * (a broken one only waits to be stopped). Returns the count. Caller holds ep->mu. */
static int poll_set(tether__tcp_ep *ep, struct pollfd *pfd)
{
    pfd[0] = (struct pollfd){.fd = ep->prog->wake[0], .events = POLLIN};
    if (ep->err)
        return 1;
    for (int i = 0; i < ep->nflat; i++)
        pfd[1 + i] = (struct pollfd){.fd = ep->flat[i]->eof ? -1 : ep->flat[i]->fd,
                                     .events = POLLIN | (ep->flat[i]->txhead ? POLLOUT : 0)};
    return 1 + ep->nflat;
}

static void drain_wake(int fd)
{
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0)
        continue;
}

/* After a break: abort once, so every neighbour learns of it (and does the same). */
static void propagate(tether__tcp_ep *ep)
{
    char msg[TETHER_ERRMSG_MAX];
    int code = ep->err;
    ep->prog->propagated = 1;
    memcpy(msg, ep->errmsg, sizeof msg);
    pthread_mutex_unlock(&ep->mu);
    tether__tcp_abort(ep, code, msg); /* takes the mutex; a no-op if the program aborted first */
    pthread_mutex_lock(&ep->mu);
}

static void *run(void *arg)
{
    tether__tcp_ep *ep = arg;
    tether__tcp_progress *pr = ep->prog;
    struct pollfd *pfd = malloc((size_t)(1 + ep->nflat) * sizeof *pfd);
    pthread_mutex_lock(&ep->mu);
    if (!pfd)
        tether__tcp_break(ep, TETHER_ENOMEM, "out of memory for the progress thread's poll set");
    while (!pr->stop && pfd) {
        int n = poll_set(ep, pfd);
        pthread_mutex_unlock(&ep->mu);
        int got = poll(pfd, (nfds_t)n, HEARTBEAT_MS);
        int poll_errno = errno;
        pthread_mutex_lock(&ep->mu);
        if (got < 0 && poll_errno != EINTR)
            tether__tcp_break(ep, TETHER_ENET, "rank %d: poll() in the progress thread: %s",
                              ep->rank, strerror(poll_errno));
        if (got > 0 && (pfd[0].revents & POLLIN))
            drain_wake(pr->wake[0]);
        if (got > 0 && n > 1 && !ep->err)
            tether__tcp_progress_ready(ep, pfd + 1);
        if (ep->err && !pr->propagated)
            propagate(ep);
        tether__tcp_progress_signal(ep);
    }
    pthread_mutex_unlock(&ep->mu);
    free(pfd);
    return NULL;
}

int tether__tcp_progress_start(tether__tcp_ep *ep)
{
    tether__tcp_progress *pr = calloc(1, sizeof *pr);
    if (!pr)
        return tether__fail(TETHER_ENOMEM, "out of memory for the progress thread");
    int rc = tether__wake_pipe(pr->wake, "tcp");
    if (rc < 0) {
        free(pr);
        return rc;
    }
    if ((rc = tether__cond_init(&pr->moved)) < 0) {
        close(pr->wake[0]);
        close(pr->wake[1]);
        free(pr);
        return rc;
    }
    pthread_mutex_lock(&ep->mu);
    ep->prog = pr;
    int e = pthread_create(&pr->thread, NULL, run, ep);
    if (e)
        ep->prog = NULL;
    pthread_mutex_unlock(&ep->mu);
    if (e) {
        pthread_cond_destroy(&pr->moved);
        close(pr->wake[0]);
        close(pr->wake[1]);
        free(pr);
        return tether__fail(TETHER_ENOMEM, "pthread_create for the progress thread: %s",
                            strerror(e));
    }
    return TETHER_OK;
}

/* A normal close: announce it and keep the thread passing frames on until every rank has. */
static void linger(tether__tcp_ep *ep, int linger_ms)
{
    struct timespec until = tether__cond_deadline(linger_ms);
    pthread_mutex_lock(&ep->mu);
    if (!ep->err && tether__tcp_route_leave(ep) == TETHER_OK)
        tether__tcp_progress_kick(ep); /* the notices may wait for room behind other frames */
    while (!ep->err && !tether__tcp_route_all_left(ep))
        if (pthread_cond_timedwait(&ep->prog->moved, &ep->mu, &until) == ETIMEDOUT) {
            TLOG_INFO("rank %d: closing after %d ms although some ranks have not closed yet; "
                      "messages between them through this rank will fail",
                      ep->rank, linger_ms);
            break;
        }
    pthread_mutex_unlock(&ep->mu);
}

void tether__tcp_progress_stop(tether__tcp_ep *ep, int linger_ms)
{
    tether__tcp_progress *pr = ep->prog;
    if (!pr)
        return;
    if (linger_ms > 0)
        linger(ep, linger_ms);
    pthread_mutex_lock(&ep->mu);
    pr->stop = 1;
    tether__tcp_progress_kick(ep);
    pthread_mutex_unlock(&ep->mu);
    pthread_join(pr->thread, NULL);
    pthread_mutex_lock(&ep->mu);
    ep->prog = NULL;
    pthread_mutex_unlock(&ep->mu);
    pthread_cond_destroy(&pr->moved);
    close(pr->wake[0]);
    close(pr->wake[1]);
    free(pr);
}
