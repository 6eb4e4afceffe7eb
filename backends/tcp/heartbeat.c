/* backends/tcp/heartbeat.c - liveness of the linked peers.
 *
 * A rank may wait in a collective for hours while its peers are busy elsewhere (a serving loop's
 * workers waiting for rank 0's next request), so "no progress for TETHER_TIMEOUT" cannot tell a
 * busy peer from a stopped one. Every endpoint keeps a thread that, every TETHER_HEARTBEAT, queues
 * a heartbeat frame (a header alone) on link 0 of each linked peer whose link is idle, and pushes
 * on sends left queued on a full socket; it never reads, so the engine's receive paths are as they
 * were, and never breaks the endpoint (a write that fails is the next call's to report). A heartbeat is only sent on an idle link, so a peer that reads nothing for an hour holds at
 * most one queued here. What arrives is counted where the kernel has it (read, or waiting in the
 * socket: heartbeats may sit behind frames nobody has asked for yet), by the thread every period
 * and by a wait with no progress for a period (tether__tcp_alive) every quarter period; that wait
 * also reads what the links hold, so an hour of heartbeats never fills a socket, and a peer that
 * has sent no byte, heartbeat or data, for TETHER_HEARTBEATS_MISSED periods breaks the endpoint. A
 * SIGSTOPped, hung (its threads not running) or unreachable peer is caught so within seconds,
 * while a peer that is merely busy keeps answering. Routed peers (the ring) are watched by their
 * own neighbours, whose break crosses the ring. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"
#include "socket.h"

struct tether__tcp_beat {
    pthread_t thread;
    pthread_mutex_t mu; /* guards stop; the thread sleeps on cv */
    pthread_cond_t cv;
    int stop;
    int period_ms;
    /* under ep->mu: per peer, the bytes arrived when last looked at and when that changed */
    uint64_t *seen;
    int64_t *heard_ms;
    int64_t checked_ms;
};

/* Heartbeats on every idle link 0; queued sends pushed on. Caller holds ep->mu. */
static void beat(tether__tcp_ep *ep)
{
    for (int p = 0; p < ep->size && !ep->err; p++) {
        tether__link *l = ep->nlinks[p] > 0 ? &ep->links[p][0] : NULL;
        if (!l || l->fd < 0 || l->eof || l->bye)
            continue;
        if (l->txhead) { /* the program may be away: move its sends on (whole frames stay whole) */
            tether__tcp_nudge(ep, l, NULL);
            continue;
        }
        tether__txmsg *t = calloc(1, sizeof *t); /* the link owns it: freed once written */
        if (!t)
            continue; /* the next period tries again */
        tether__frame f = {.type = TETHER__FRAME_HEARTBEAT};
        tether__frame_encode(&f, t->hdr);
        tether__tcp_nudge(ep, l, t);
    }
}

/* Bytes arrived from peer p over all its links: read, or waiting in the socket. */
static uint64_t arrived(const tether__tcp_ep *ep, int p)
{
    uint64_t n = 0;
    for (int i = 0; i < ep->nlinks[p]; i++) {
        const tether__link *l = &ep->links[p][i];
        size_t in = 0, out = 0;
        if (l->fd >= 0 && !l->eof)
            tether__tcp_queued(l->fd, &in, &out);
        n += l->bytes_recvd + in;
    }
    return n;
}

/* Note who has been heard from since the last look. Caller holds ep->mu. */
static void sample(tether__tcp_ep *ep, tether__tcp_beat *b, int64_t now)
{
    for (int p = 0; p < ep->size; p++) {
        uint64_t got = ep->nlinks[p] > 0 ? arrived(ep, p) : 0;
        if (got != b->seen[p]) {
            b->seen[p] = got;
            b->heard_ms[p] = now;
        }
    }
}

static void *run(void *arg)
{
    tether__tcp_ep *ep = arg;
    tether__tcp_beat *b = ep->beat;
    pthread_mutex_lock(&b->mu);
    for (;;) { /* the world has just formed: the first heartbeat is due a period from now */
        struct timespec until = tether__cond_deadline(b->period_ms);
        while (!b->stop && pthread_cond_timedwait(&b->cv, &b->mu, &until) != ETIMEDOUT)
            continue;
        if (b->stop)
            break;
        pthread_mutex_unlock(&b->mu);
        pthread_mutex_lock(&ep->mu);
        beat(ep);
        if (!ep->err)
            sample(ep, b, tether__tcp_now_ms());
        pthread_mutex_unlock(&ep->mu);
        pthread_mutex_lock(&b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

static void beat_free(tether__tcp_beat *b)
{
    free(b->seen);
    free(b->heard_ms);
    free(b);
}

int tether__tcp_beat_start(tether__tcp_ep *ep, int period_ms)
{
    if (period_ms <= 0) /* a hand-made configuration (tests) without heartbeats */
        return TETHER_OK;
    tether__tcp_beat *b = calloc(1, sizeof *b);
    if (!b || !(b->seen = calloc((size_t)ep->size, sizeof *b->seen)) ||
        !(b->heard_ms = calloc((size_t)ep->size, sizeof *b->heard_ms))) {
        if (b)
            beat_free(b);
        return tether__fail(TETHER_ENOMEM, "out of memory for the heartbeats");
    }
    b->period_ms = period_ms;
    int rc = tether__cond_init(&b->cv);
    if (rc < 0) {
        beat_free(b);
        return rc;
    }
    pthread_mutex_init(&b->mu, NULL);
    pthread_mutex_lock(&ep->mu);
    b->checked_ms = tether__tcp_now_ms();
    for (int p = 0; p < ep->size; p++)
        b->heard_ms[p] = b->checked_ms;
    ep->beat = b;
    int e = pthread_create(&b->thread, NULL, run, ep);
    if (e)
        ep->beat = NULL;
    pthread_mutex_unlock(&ep->mu);
    if (e) {
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        beat_free(b);
        return tether__fail(TETHER_ENOMEM, "pthread_create for the heartbeats: %s", strerror(e));
    }
    return TETHER_OK;
}

void tether__tcp_beat_stop(tether__tcp_ep *ep)
{
    tether__tcp_beat *b = ep->beat;
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->thread, NULL);
    pthread_mutex_lock(&ep->mu);
    ep->beat = NULL;
    pthread_mutex_unlock(&ep->mu);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    beat_free(b);
}

int tether__tcp_alive(tether__tcp_ep *ep)
{
    tether__tcp_beat *b = ep->beat;
    int rc = TETHER_OK;
    if (!b)
        return TETHER_OK;
    pthread_mutex_lock(&ep->mu);
    int64_t now = tether__tcp_now_ms();
    /* 4 looks a period: a silent peer is caught at most a quarter period late */
    if (ep->err || now - b->checked_ms < b->period_ms / 4) {
        pthread_mutex_unlock(&ep->mu);
        return TETHER_OK; /* a break is test()'s to report */
    }
    b->checked_ms = now;
    sample(ep, b, now);
    /* Read what the sockets hold (a progress thread does already), so heartbeats never fill one
     * during a long wait; the count above saw them where they were. */
    for (int i = 0; i < ep->nflat && !ep->err && !ep->prog; i++)
        if (ep->flat[i]->fd >= 0 && !ep->flat[i]->eof)
            tether__tcp_read(ep, ep->flat[i], 1);
    int64_t limit = (int64_t)TETHER_HEARTBEATS_MISSED * b->period_ms;
    for (int p = 0; p < ep->size && !ep->err; p++) {
        if (ep->nlinks[p] == 0 || ep->links[p][0].bye)
            continue;
        if (now - b->heard_ms[p] > limit) {
            tether__tcp_break(ep, TETHER_ETIMEDOUT,
                              "rank %d (%s) has sent nothing, not even a heartbeat, for %.1f s "
                              "(%d heartbeats of TETHER_HEARTBEAT=%g s): it is stopped, hung or "
                              "unreachable",
                              p, ep->addr[p], (double)(now - b->heard_ms[p]) / 1000,
                              TETHER_HEARTBEATS_MISSED, b->period_ms / 1000.0);
        }
    }
    if (ep->err)
        rc = tether__fail(ep->err, "%s", ep->errmsg);
    pthread_mutex_unlock(&ep->mu);
    return rc;
}
