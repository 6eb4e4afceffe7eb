/* backends/net/loop.c - the progress thread's event loop (what it does and why: loop.h). */
#include "loop.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/log.h"

#define LONGEST_SLEEP_MS 1000 /* a safety net: every change the thread must see kicks it */

struct tether__loop {
    tether__loop_handler h;
    pthread_mutex_t *mu;
    const uint64_t *events;
    pthread_t thread;
    struct pollfd *pfd;   /* the wake pipe, then h.nfds slots */
    pthread_cond_t moved; /* *events changed */
    int wake[2];          /* pipe: something to watch, or stop */
    int stop;
    uint64_t signalled; /* *events at the last broadcast */
    int standby_ms;     /* the next standing-by look's delay (loop.h) */
    const char *who;
};

/* *events as the calling thread's last test() saw it (loop.h). */
static _Thread_local struct {
    const tether__loop *lp;
    uint64_t events;
} seen;

/* The clock of condition-variable deadlines: monotonic (immune to clock changes) where
 * pthread_condattr_setclock exists; macOS lacks it. */
#ifdef __APPLE__
#define COND_CLOCK CLOCK_REALTIME
#else
#define COND_CLOCK CLOCK_MONOTONIC
#endif

int tether__loop_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t attr;
    int e = pthread_condattr_init(&attr);
#ifndef __APPLE__
    if (!e)
        e = pthread_condattr_setclock(&attr, COND_CLOCK);
#endif
    if (!e)
        e = pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
    return e ? tether__fail(TETHER_ENOMEM, "pthread_cond_init: %s", strerror(e)) : TETHER_OK;
}

struct timespec tether__loop_deadline(int64_t ms)
{
    struct timespec ts;
    clock_gettime(COND_CLOCK, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* A non-blocking, close-on-exec pipe. ENET naming the failed call. */
static int wake_pipe(int fds[2], const char *who)
{
    if (pipe(fds) < 0)
        return tether__fail(TETHER_ENET, "%s: pipe() for the progress thread: %s", who,
                            strerror(errno));
    for (int i = 0; i < 2; i++) {
        int fl = fcntl(fds[i], F_GETFL);
        if (fl < 0 || fcntl(fds[i], F_SETFL, fl | O_NONBLOCK) < 0 ||
            fcntl(fds[i], F_SETFD, FD_CLOEXEC) < 0) {
            int e = errno;
            close(fds[0]);
            close(fds[1]);
            return tether__fail(TETHER_ENET, "%s: fcntl() on the progress thread's pipe: %s", who,
                                strerror(e));
        }
    }
    return TETHER_OK;
}

static void drain_wake(int fd)
{
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0)
        continue;
}

static void *run(void *arg)
{
    tether__loop *lp = arg;
    struct pollfd *pfd = lp->pfd;
    pthread_mutex_lock(lp->mu);
    while (!lp->stop) {
        int again = lp->h.due(lp->h.arg);
        tether__loop_signal(lp);
        if (again)
            continue;
        pfd[0] = (struct pollfd){.fd = lp->wake[0], .events = POLLIN};
        int standby = lp->h.standby && lp->h.standby(lp->h.arg);
        int n = 1 + (standby ? 0 : lp->h.fds(lp->h.arg, pfd + 1));
        int ms = LONGEST_SLEEP_MS;
        if (standby) { /* look again soon, then less often while the program stays inside */
            ms = lp->standby_ms;
            lp->standby_ms =
                ms < TETHER__LOOP_STANDBY_MAX_MS / 2 ? 2 * ms : TETHER__LOOP_STANDBY_MAX_MS;
        } else {
            lp->standby_ms = TETHER__LOOP_STANDBY_MS;
        }
        pthread_mutex_unlock(lp->mu);
        int got = poll(pfd, (nfds_t)n, ms);
        int poll_errno = errno;
        pthread_mutex_lock(lp->mu);
        if (got < 0 && poll_errno != EINTR)
            lp->h.failed(lp->h.arg, poll_errno);
        if (got <= 0)
            continue;
        if (pfd[0].revents & POLLIN)
            drain_wake(lp->wake[0]);
        if (n > 1)
            lp->h.ready(lp->h.arg, pfd + 1, n - 1);
    }
    pthread_mutex_unlock(lp->mu);
    return NULL;
}

static void loop_free(tether__loop *lp)
{
    pthread_cond_destroy(&lp->moved);
    close(lp->wake[0]);
    close(lp->wake[1]);
    free(lp->pfd);
    free(lp);
}

int tether__loop_start(const tether__loop_handler *h, pthread_mutex_t *mu, const uint64_t *events,
                       const char *who, tether__loop **out)
{
    tether__loop *lp = calloc(1, sizeof *lp);
    if (!lp)
        return tether__fail(TETHER_ENOMEM, "%s: out of memory for the progress thread", who);
    *lp = (tether__loop){
        .h = *h, .mu = mu, .events = events, .who = who, .standby_ms = TETHER__LOOP_STANDBY_MS};
    if (!(lp->pfd = malloc((size_t)(1 + h->nfds) * sizeof *lp->pfd))) {
        free(lp);
        return tether__fail(TETHER_ENOMEM, "%s: out of memory for the progress thread", who);
    }
    int rc = wake_pipe(lp->wake, who);
    if (rc < 0) {
        free(lp->pfd);
        free(lp);
        return rc;
    }
    if ((rc = tether__loop_cond_init(&lp->moved)) < 0) {
        close(lp->wake[0]);
        close(lp->wake[1]);
        free(lp->pfd);
        free(lp);
        return rc;
    }
    pthread_mutex_lock(mu);
    *out = lp;
    int e = pthread_create(&lp->thread, NULL, run, lp);
    if (e)
        *out = NULL;
    pthread_mutex_unlock(mu);
    if (e) {
        loop_free(lp);
        return tether__fail(TETHER_ENOMEM, "%s: starting the progress thread: %s", who,
                            strerror(e));
    }
    return TETHER_OK;
}

void tether__loop_stop(tether__loop **slot)
{
    tether__loop *lp = *slot;
    if (!lp)
        return;
    lp->stop = 1;
    tether__loop_kick(lp);
    pthread_mutex_unlock(lp->mu);
    pthread_join(lp->thread, NULL);
    pthread_mutex_lock(lp->mu);
    *slot = NULL;
    loop_free(lp);
}

void tether__loop_kick(tether__loop *lp)
{
    /* a full pipe already holds a wake-up, so EAGAIN is fine */
    if (write(lp->wake[1], "", 1) < 0 && errno != EAGAIN)
        TLOG_TRACE("%s: waking the progress thread: %s", lp->who, strerror(errno));
}

void tether__loop_signal(tether__loop *lp)
{
    if (*lp->events != lp->signalled) {
        lp->signalled = *lp->events;
        pthread_cond_broadcast(&lp->moved);
    }
}

void tether__loop_seen(const tether__loop *lp)
{
    seen.lp = lp;
    seen.events = *lp->events;
}

int tether__loop_missed(const tether__loop *lp)
{
    return seen.lp == lp && seen.events != *lp->events;
}

int tether__loop_sleep(tether__loop *lp, const struct timespec *until)
{
    return pthread_cond_timedwait(&lp->moved, lp->mu, until) == ETIMEDOUT;
}
