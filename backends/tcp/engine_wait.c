/* backends/tcp/engine_wait.c - waiting in poll() on every link, and the progress thread's handler.
 *
 * wait() sleeps in poll() on every link and moves what is ready, in the calling thread: a reply
 * then costs one wake-up. An endpoint may also run a progress thread (the ring: a message between
 * distant ranks passes through ranks that may be busy computing, and a failure must cross the ring
 * even when nobody calls tether): backends/net's event loop over this file's handler, which sleeps
 * in poll() on every socket, moves whatever is ready under the endpoint's mutex (as test() does),
 * and when the endpoint breaks, aborts it once, which tells every neighbour, which does the same.
 * While the program's threads are inside calls they move the bytes themselves (test() and wait()
 * here, reading eagerly and passing routed frames on as the thread would), and the thread stands by
 * (loop.h): it watches the sockets again once no call came for TETHER__LOOP_STANDBY_MS. Handing
 * every reply from the thread to the waiting program thread made a ring's neighbour messages cost
 * two wake-ups in a row, up to 3.6 times a mesh's time for the same bytes (issue 23). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "backends/net/socket.h"
#include "engine_break.h"
#include "engine_core.h"
#include "engine_impl.h"
#include "engine_lane.h"
#include "engine_rx.h"
#include "engine_shm.h"
#include "engine_wait.h"

#define POLL_STACK 64

void tether__tcp_progress_ready(tether__tcp_ep *ep, const struct pollfd *pfd)
{
    for (int i = 0; i < ep->nflat && !ep->err; i++) {
        tether__link *l = ep->flat[i];
        short room = l->shm_tx ? POLLIN | POLLOUT : POLLOUT; /* a ring's room rings a doorbell */
        if ((pfd[i].revents & room) && l->txhead && tether__tcp_flush(ep, l) < 0)
            return;
        if (ep->loop)
            tether__tcp_loop_input(ep, l, pfd[i].revents);
        else if (pfd[i].revents)
            tether__tcp_input_ready(ep, l, pfd[i].revents);
    }
}

/* What to watch on every socket link (caller holds ep->mu). With a progress thread every input is
 * read at once (routed frames must pass on; engine_impl.h's tether__tcp_read), but for links held
 * back while chunks passing through wait for room onward, or (on the progress thread) stopped
 * inside an unexpected message (engine_rx.c). */
static int poll_set(tether__tcp_ep *ep, struct pollfd *pfd)
{
    for (int i = 0; i < ep->nflat; i++) {
        const tether__link *l = ep->flat[i];
        short events = ep->loop ? tether__tcp_loop_events(ep, l) : tether__tcp_poll_events(l);
        pfd[i] = (struct pollfd){.fd = l->eof ? -1 : l->fd, /* -1: not polled */
                                 .events = events};
    }
    return ep->nflat;
}

/* A wait passed idle: copy every unexpected descriptor out, so that its sender can finish (cma.h).
 */
static void cma_unblock(tether__tcp_ep *ep)
{
    for (int i = 0; i < ep->nflat && !ep->err; i++) {
        tether__link *l = ep->flat[i];
        tether__cma_at at = tether__tcp_cma_at(ep, l);
        tether__cma_todo t = {.fail = TETHER__CMA_OK};
        while (tether__cma_unblock(&l->cma, &ep->links[l->peer][0].cma, &at, &l->unexpected, &t)) {
            if (tether__tcp_apply(ep, l, &t) < 0)
                return;
            t = (tether__cma_todo){.fail = TETHER__CMA_OK};
        }
    }
}

/* A whole wait passed with nothing moving. If a send is stuck on a link whose peer has sent bytes
 * we have not asked for yet, that peer may be stuck sending to us in turn (both sent before
 * receiving, with messages larger than the socket buffers): take its bytes after all, as
 * unexpected messages, so both sends can finish; and copy out what waits in senders' memory. */
static void unblock(tether__tcp_ep *ep)
{
    for (int i = 0; i < ep->nflat && !ep->err; i++)
        if (ep->flat[i]->held && ep->flat[i]->txhead)
            tether__tcp_read(ep, ep->flat[i], 1);
    cma_unblock(ep);
}

/* The sticky error after a wait. With a progress thread none: the reads are eager, so a request
 * whose bytes came in just before another rank's abort is complete and must still report done,
 * and test() reports the break. */
static int after_wait(const tether__tcp_ep *ep)
{
    return ep->err && !ep->loop ? tether__tcp_sticky(ep) : TETHER_OK;
}

int tether__tcp_wait(tether__ep *tep, int timeout_ms)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
    struct pollfd stack[POLL_STACK], *pfd = stack;
    pthread_mutex_lock(&ep->mu);
    ep->calls++;
    atomic_fetch_add_explicit(&ep->sleeps, 1, memory_order_relaxed);
    /* broken, or another thread (the progress thread) finished parts since this one's test() */
    if (ep->err || (ep->loop && tether__loop_missed(ep->loop))) {
        int rc = after_wait(ep);
        if (ep->loop)
            tether__loop_seen(ep->loop);
        pthread_mutex_unlock(&ep->mu);
        return rc;
    }
    if (ep->nflat > POLL_STACK && !(pfd = malloc((size_t)ep->nflat * sizeof *pfd))) {
        pthread_mutex_unlock(&ep->mu);
        return tether__fail(TETHER_ENOMEM, "out of memory polling %d links", ep->nflat);
    }
    /* every link, not only those of pending requests: a dead peer is noticed while we wait on
     * another, and frames for others pass on */
    int nfds = poll_set(ep, pfd);
    ep->drivers++;
    pthread_mutex_unlock(&ep->mu);
    int n = poll(pfd, (nfds_t)nfds, timeout_ms);
    int poll_errno = errno;
    pthread_mutex_lock(&ep->mu);
    ep->drivers--;
    if (n < 0 && poll_errno != EINTR)
        tether__tcp_break(ep, TETHER_ENET, "poll() on %d links: %s", nfds, strerror(poll_errno));
    else if (n > 0 && !ep->err)
        tether__tcp_progress_ready(ep, pfd);
    else if (n == 0 && !ep->err)
        ep->loop ? cma_unblock(ep) : unblock(ep);
    if (ep->loop)
        tether__loop_signal(ep->loop); /* we may have finished another thread's request */
    int rc = after_wait(ep);
    pthread_mutex_unlock(&ep->mu);
    if (pfd != stack)
        free(pfd);
    return rc;
}

/* ---- the progress thread's handler (net/loop.h), called with ep->mu held ---- */

/* After a break: abort once, so every neighbour learns of it (and does the same). */
static int loop_due(void *arg)
{
    tether__tcp_ep *ep = arg;
    if (ep->err && !ep->propagated) {
        char msg[TETHER__ERRMSG_MAX];
        int code = ep->err;
        ep->propagated = 1;
        memcpy(msg, ep->errmsg, sizeof msg);
        pthread_mutex_unlock(&ep->mu);
        tether__tcp_abort((tether__ep *)ep, code, msg); /* a no-op if the program aborted first */
        pthread_mutex_lock(&ep->mu);
    }
    return 0;
}

/* Every socket still open while the endpoint is healthy (a broken one only waits to be stopped). */
static int loop_fds(void *arg, struct pollfd *pfd)
{
    tether__tcp_ep *ep = arg;
    tether__tcp_loop_thread = 1; /* only the progress thread calls the handlers */
    return ep->err ? 0 : poll_set(ep, pfd);
}

/* The program is inside calls (one asleep in wait(), or any call since the last look): it moves the
 * bytes. A broken endpoint's thread only waits to be stopped, so it never stands by (its break must
 * reach the neighbours first: loop_due). */
static int loop_standby(void *arg)
{
    tether__tcp_ep *ep = arg;
    int inside = ep->drivers > 0 || ep->calls != ep->calls_seen;
    ep->calls_seen = ep->calls;
    ep->standing_by = inside && !ep->err;
    return ep->standing_by;
}

static void loop_ready(void *arg, const struct pollfd *pfd, int n)
{
    tether__tcp_ep *ep = arg;
    (void)n;
    tether__tcp_loop_thread = 1;
    if (!ep->err)
        tether__tcp_progress_ready(ep, pfd);
}

static void loop_failed(void *arg, int err)
{
    tether__tcp_ep *ep = arg;
    tether__tcp_break(ep, TETHER_ENET, "rank %d: poll() in the progress thread: %s", ep->rank,
                      strerror(err));
}

int tether__tcp_progress_start(tether__tcp_ep *ep)
{
    tether__loop_handler h = {.arg = ep,
                              .nfds = ep->nflat,
                              .due = loop_due,
                              .fds = loop_fds,
                              .ready = loop_ready,
                              .failed = loop_failed,
                              .standby = loop_standby};
    return tether__loop_start(&h, &ep->mu, &ep->events, ep->backend, &ep->loop);
}

/* A normal close: announce it and keep the thread passing frames on until every rank has. */
static void linger(tether__tcp_ep *ep, int linger_ms)
{
    struct timespec until = tether__loop_deadline(linger_ms);
    int rc = TETHER_OK;
    for (int p = -1; !ep->err && rc == TETHER_OK &&
                     (p = tether__route_leave_next(&ep->routes, -1, ep->rank, p)) >= 0;)
        rc = tether__tcp_queue_leave(ep, p, ep->rank);
    if (!ep->err && rc == TETHER_OK)
        tether__loop_kick(ep->loop); /* the notices may wait for room behind other frames */
    while (!ep->err && !tether__route_all_left(&ep->routes))
        if (tether__loop_sleep(ep->loop, &until)) {
            TLOG_INFO("rank %d: closing after %d ms although some ranks have not closed yet; "
                      "messages between them through this rank will fail",
                      ep->rank, linger_ms);
            break;
        }
}

void tether__tcp_progress_stop(tether__tcp_ep *ep, int linger_ms)
{
    pthread_mutex_lock(&ep->mu);
    if (ep->loop && linger_ms > 0)
        linger(ep, linger_ms);
    tether__loop_stop(&ep->loop);
    pthread_mutex_unlock(&ep->mu);
}

/* ---- opening: the offers of the memory path (cma.h) and the rings (engine_shm.c) ---- */

/* Whether link 0 of a peer still waits for the memory path's offer or answer, or the rings'. */
static int negotiating(const tether__link *l)
{
    return tether__cma_negotiating(&l->cma) || l->shm_due || l->rings_due;
}

/* Wait at most ms for the links still negotiating, and move their frames. Only those: a frame of
 * another peer that has finished (its first collective, or an abort of it) is no business of
 * opening, and reading stops at the end of the exchange for the same reason (frames follow it in
 * order). */
static int negotiate_step(tether__tcp_ep *ep, struct pollfd *pfd, tether__link **ls, int ms)
{
    int n = 0;
    pthread_mutex_lock(&ep->mu);
    for (int peer = 0; peer < ep->size; peer++) {
        tether__link *l = ep->nlinks[peer] > 0 ? &ep->links[peer][0] : NULL;
        if (l && negotiating(l)) {
            pfd[n] = (struct pollfd){.fd = l->fd, .events = tether__tcp_poll_events(l)};
            ls[n++] = l;
        }
    }
    pthread_mutex_unlock(&ep->mu);
    if (poll(pfd, (nfds_t)n, ms) < 0 && errno != EINTR)
        return tether__fail(TETHER_ENET, "poll() on %d links: %s", n, strerror(errno));
    pthread_mutex_lock(&ep->mu);
    for (int i = 0; i < n && !ep->err; i++) {
        short room = ls[i]->shm_tx ? POLLIN | POLLOUT : POLLOUT;
        if ((pfd[i].revents & room) && ls[i]->txhead)
            tether__tcp_flush(ep, ls[i]);
        if (pfd[i].revents && !ep->err)
            tether__tcp_opening_input(ep, ls[i], pfd[i].revents);
    }
    int rc = ep->err ? tether__tcp_sticky(ep) : TETHER_OK;
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

/* The first peer still negotiating, or -1. */
static int first_negotiating(const tether__tcp_ep *ep)
{
    for (int peer = 0; peer < ep->size; peer++)
        if (ep->nlinks[peer] > 0 && negotiating(&ep->links[peer][0]))
            return peer;
    return -1;
}

/* Whether this rank's every pair has rings, its offers settled. */
static int rings_everywhere(const tether__tcp_ep *ep)
{
    for (int p = 0; p < ep->size; p++)
        if (p != ep->rank && !(ep->nlinks[p] == 1 && ep->links[p][0].shm))
            return 0;
    return 1;
}

/* Opening's second round on a full mesh: say to every peer whether this rank's every pair has
 * rings, and wait for theirs (rings_due), so that every rank holds the same answer for the whole
 * job in ep->rings_all, whatever pair failed to map its rings (a full /dev/shm) or declined them. A
 * ring rank that links only its neighbours has no such round: it has no rings. */
static int say_rings(tether__tcp_ep *ep)
{
    ep->rings_all = 0;
    for (int p = 0; p < ep->size; p++)
        if (p != ep->rank && ep->nlinks[p] == 0)
            return TETHER_OK;
    pthread_mutex_lock(&ep->mu);
    int mine = rings_everywhere(ep), rc = TETHER_OK;
    for (int p = 0; p < ep->size && rc == TETHER_OK; p++) {
        if (p == ep->rank)
            continue;
        tether__link *l = &ep->links[p][0];
        tether__frame f = {.type = TETHER__FRAME_RINGS_ALL, .code = mine};
        rc = tether__tcp_tx_owned(ep, l, &f, NULL, 0);
        /* the peer's may be read ahead already, whole or in part, where no poll() would see it */
        if (rc == TETHER_OK && (l->rings_due = l->rings_seen < 0) != 0)
            rc = tether__tcp_read(ep, l, 0);
    }
    if (rc < 0)
        rc = tether__tcp_sticky(ep);
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

/* After say_rings' round: the job's answer. */
static void agree_rings(tether__tcp_ep *ep)
{
    pthread_mutex_lock(&ep->mu);
    int all = rings_everywhere(ep);
    for (int p = 0; p < ep->size && all; p++)
        if (p != ep->rank)
            all = ep->nlinks[p] > 0 && ep->links[p][0].rings_seen == 1;
    ep->rings_all = all;
    pthread_mutex_unlock(&ep->mu);
}

/* Move the negotiating links' frames until none negotiates, or the deadline; missing names what a
 * silent peer did not send, for the error. */
static int settle(tether__tcp_ep *ep, struct pollfd *pfd, tether__link **ls, int64_t deadline,
                  int timeout_ms, const char *missing)
{
    int rc = TETHER_OK;
    for (int peer; rc == TETHER_OK && (peer = first_negotiating(ep)) >= 0;) {
        int64_t left = deadline - tether__net_now_ms();
        if (left > 0) {
            rc = negotiate_step(ep, pfd, ls, (int)(left < 100 ? left : 100));
            continue;
        }
        pthread_mutex_lock(&ep->mu);
        tether__tcp_break(ep, TETHER_ETIMEDOUT,
                          "rank %d (%s) formed its link but sent no %s within %d s: is it "
                          "stopped?",
                          peer, ep->addr[peer], missing, timeout_ms / 1000);
        rc = tether__tcp_sticky(ep);
        pthread_mutex_unlock(&ep->mu);
    }
    return rc;
}

int tether__tcp_negotiate(tether__tcp_ep *ep, int timeout_ms)
{
    pthread_mutex_lock(&ep->mu);
    int rc = TETHER_OK;
    /* every link exchanges offers, empty where this side sees another host: both sides then wait
     * for the same frames even where they disagree on that (an address translated on the way) */
    for (int peer = 0; peer < ep->size && rc == TETHER_OK; peer++) {
        if (ep->nlinks[peer] == 0)
            continue;
        tether__link *l = &ep->links[peer][0];
        tether__cma_todo t = {.fail = TETHER__CMA_OK};
        tether__cma_offer(&l->cma, ep->cma_min && tether__net_same_host(l->fd), &t);
        rc = tether__tcp_apply(ep, l, &t);
        tether__frame offer;
        if (rc == TETHER_OK && tether__tcp_shm_offer(ep, l, &offer))
            rc = tether__tcp_tx_owned(ep, l, &offer, NULL, 0);
    }
    if (rc < 0) /* the break recorded why; the caller reports it */
        rc = tether__tcp_sticky(ep);
    pthread_mutex_unlock(&ep->mu);
    TRY(rc);
    struct pollfd *pfd = malloc((size_t)ep->size * sizeof *pfd);
    tether__link **ls = malloc((size_t)ep->size * sizeof *ls);
    if (!pfd || !ls)
        rc = tether__fail(TETHER_ENOMEM, "out of memory for the links of %d ranks", ep->size);
    int64_t deadline = tether__net_now_ms() + timeout_ms;
    if (rc == TETHER_OK &&
        (rc = settle(ep, pfd, ls, deadline, timeout_ms, "memory offer or answer")) == TETHER_OK &&
        (rc = say_rings(ep)) == TETHER_OK &&
        (rc = settle(ep, pfd, ls, deadline, timeout_ms,
                     "word on whether all its pairs have rings")) == TETHER_OK)
        agree_rings(ep);
    free(pfd);
    free(ls);
    return rc;
}
