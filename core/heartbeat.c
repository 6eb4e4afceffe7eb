/* core/heartbeat.c - the heartbeat thread and the liveness ledger (core/heartbeat.h). The thread
 * sleeps in poll() on a pipe, so stopping it is a write and its periods follow the monotonic clock
 * on every system. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "errors.h"
#include "heartbeat.h"
#include "params.h"

/* The thread wakes this many times a period: each time to note what arrived (so a peer's
 * silence is timed from within a quarter period of its last bytes), the last to send too. */
#define TICKS 4

struct tether__heartbeat {
    pthread_t thread;
    int wake[2]; /* a byte here stops the thread */
    int period_ms;
    void (*beat)(void *ctx, int send);
    void *ctx;
    int size;
    uint64_t *seen;    /* per peer: what had arrived at the last note */
    int64_t *heard_ms; /* per peer: when that last changed */
    int64_t looked_ms; /* the last look of a waiting rank */
    int64_t stood_ms;  /* the last time a busy holder of the lock stood in for the thread */
};

static void *run(void *arg)
{
    tether__heartbeat *h = arg;
    struct pollfd pfd = {.fd = h->wake[0], .events = POLLIN};
    for (unsigned tick = 1;; tick++) {
        int n = poll(&pfd, 1, h->period_ms / TICKS);
        if (n > 0 || (n < 0 && errno != EINTR))
            return NULL; /* stop (or a broken pipe: no heartbeats rather than a spinning thread) */
        if (n == 0)
            h->beat(h->ctx, tick % TICKS == 0);
    }
}

static void heartbeat_free(tether__heartbeat *h)
{
    free(h->seen);
    free(h->heard_ms);
    free(h);
}

int tether__heartbeat_start(int size, int period_ms, void (*beat)(void *ctx, int send), void *ctx,
                            tether__heartbeat **out)
{
    *out = NULL;
    if (period_ms <= 0)
        return TETHER_OK;
    tether__heartbeat *h = calloc(1, sizeof *h);
    if (!h || !(h->seen = calloc((size_t)size, sizeof *h->seen)) ||
        !(h->heard_ms = calloc((size_t)size, sizeof *h->heard_ms))) {
        if (h)
            heartbeat_free(h);
        return tether__fail(TETHER_ENOMEM, "out of memory for the heartbeats");
    }
    if (pipe(h->wake) < 0) {
        int e = errno;
        heartbeat_free(h);
        return tether__fail(TETHER_ENET, "pipe() for the heartbeats: %s", strerror(e));
    }
    h->period_ms = period_ms;
    h->beat = beat;
    h->ctx = ctx;
    h->size = size;
    h->looked_ms = tether__now_ms();
    for (int p = 0; p < size; p++)
        h->heard_ms[p] = h->looked_ms;
    /* Stored before the thread starts, which makes it visible there: beat() finds it through ctx
     * (TSan saw the thread read ep->beat while this thread was still storing it). */
    *out = h;
    int e = pthread_create(&h->thread, NULL, run, h);
    if (e) {
        *out = NULL;
        close(h->wake[0]);
        close(h->wake[1]);
        heartbeat_free(h);
        return tether__fail(TETHER_ENOMEM, "pthread_create for the heartbeats: %s", strerror(e));
    }
    return TETHER_OK;
}

void tether__heartbeat_stop(tether__heartbeat *h)
{
    if (!h)
        return;
    while (write(h->wake[1], "", 1) < 0 && errno == EINTR)
        continue;
    pthread_join(h->thread, NULL);
    close(h->wake[0]);
    close(h->wake[1]);
    heartbeat_free(h);
}

void tether__heartbeat_note(tether__heartbeat *h, int peer, uint64_t arrived, int64_t now_ms)
{
    if (arrived != h->seen[peer]) {
        h->seen[peer] = arrived;
        h->heard_ms[peer] = now_ms;
    }
}

int tether__heartbeat_due(tether__heartbeat *h, int64_t now_ms)
{
    if (!h || now_ms - h->looked_ms < h->period_ms / TICKS)
        return 0;
    h->looked_ms = now_ms;
    return 1;
}

int tether__heartbeat_stand_in(tether__heartbeat *h, int64_t now_ms)
{
    if (!h || now_ms - h->stood_ms < h->period_ms)
        return 0;
    h->stood_ms = now_ms;
    return 1;
}

int tether__heartbeat_silent(const tether__heartbeat *h, int peer, const char *where,
                             int64_t now_ms, char *why, size_t why_len)
{
    int64_t silent = now_ms - h->heard_ms[peer];
    if (silent <= (int64_t)TETHER__HEARTBEATS_MISSED * h->period_ms)
        return 0;
    snprintf(why, why_len,
             "rank %d (%s) has sent nothing, not even a heartbeat, for %.1f s (%d heartbeats of "
             "%s=%g s): it is stopped, hung or unreachable",
             peer, where, (double)silent / 1000, TETHER__HEARTBEATS_MISSED, TETHER__VAR(HEARTBEAT),
             h->period_ms / 1000.0);
    return 1;
}
