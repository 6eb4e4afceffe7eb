/* cq.c - completion queues and channels: bounded CQs that break on overrun, delayed visibility,
 * events.
 *
 * A CQ holds at most cqe entries; one more breaks it for good (ibv_poll_cq returns -1 with errno
 * EOVERFLOW), as an overrun does on hardware. An armed CQ writes one event to its channel's pipe on
 * the next completion that becomes visible (errors count as solicited), so a caller can poll() the
 * channel fd. With SOFTVERBS_DELAY_US an entry becomes visible only that long after it was made.
 */
#include "softverbs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

sv_cq *softverbs__cqs;

static sv_cqe *entry(sv_cq *q, int i)
{
    return &q->ring[(q->head + i) % q->cap];
}

static void fire(sv_cq *q)
{
    sv_channel *ch = (sv_channel *)q->cq.channel;
    struct ibv_cq *p = &q->cq;
    q->armed = 0;
    /* The pipe holds thousands of events; a full one means nobody reads them, so one more lost
     * event changes nothing. */
    if (write(ch->wfd, &p, sizeof p) != (ssize_t)sizeof p)
        softverbs__note("CQ event lost: the channel's pipe is full");
}

/* Mark entries visible by now as seen, and send the event an armed CQ waits for. */
static void announce(sv_cq *q, uint64_t now)
{
    for (int i = 0; i < q->count; i++) {
        sv_cqe *e = entry(q, i);
        if (e->ready_us > now)
            break;
        if (e->announced)
            continue;
        e->announced = 1;
        if (q->armed == 1 || (q->armed == 2 && (e->solicited || e->wc.status != IBV_WC_SUCCESS)))
            fire(q);
    }
}

int softverbs__cq_push(sv_cq *q, const struct ibv_wc *wc, unsigned span, int solicited)
{
    uint64_t now = softverbs__now_us();
    sv_cqe *e;
    if (q->overflow)
        return -1;
    if (q->count == q->cap) {
        q->overflow = 1;
        softverbs__note("CQ of %d entries overran (QP %u): it is broken now", q->cap, wc->qp_num);
        if (q->armed)
            fire(q);
        return -1;
    }
    e = entry(q, q->count++);
    e->wc = *wc;
    e->ready_us = now + (uint64_t)softverbs__env.delay_us + softverbs__fault_jitter_us();
    e->announced = 0;
    e->solicited = solicited;
    e->span = span;
    announce(q, now);
    return 0;
}

uint64_t softverbs__cq_tick(uint64_t now)
{
    uint64_t due = 0;
    for (sv_cq *q = softverbs__cqs; q; q = q->next) {
        announce(q, now);
        for (int i = 0; i < q->count; i++) {
            sv_cqe *e = entry(q, i);
            if (!e->announced) {
                due = due && due < e->ready_us ? due : e->ready_us;
                break;
            }
        }
    }
    return due;
}

int softverbs__poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    sv_cq *q = (sv_cq *)cq;
    uint64_t now = softverbs__now_us();
    int got = 0;
    pthread_mutex_lock(&softverbs__lock);
    if (q->overflow) {
        pthread_mutex_unlock(&softverbs__lock);
        errno = EOVERFLOW;
        return -1;
    }
    announce(q, now);
    while (got < n && q->count > 0 && entry(q, 0)->ready_us <= now) {
        sv_cqe *e = entry(q, 0);
        sv_qp *qp = e->span ? softverbs__qp_find(e->wc.qp_num) : NULL;
        if (qp) /* a reset in between already emptied the send queue: never below 0 */
            qp->sq_outstanding =
                qp->sq_outstanding > (int)e->span ? qp->sq_outstanding - (int)e->span : 0;
        wc[got++] = e->wc;
        q->head = (q->head + 1) % q->cap;
        q->count--;
    }
    pthread_mutex_unlock(&softverbs__lock);
    return got;
}

int softverbs__req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    sv_cq *q = (sv_cq *)cq;
    if (!cq->channel)
        return softverbs__fail(EINVAL, "ibv_req_notify_cq: the CQ has no completion channel");
    pthread_mutex_lock(&softverbs__lock);
    q->armed = solicited_only ? 2 : 1;
    pthread_mutex_unlock(&softverbs__lock);
    return 0;
}

SV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    sv_channel *ch = calloc(1, sizeof *ch);
    int fds[2];
    if (!ch || pipe2(fds, O_CLOEXEC) < 0) {
        int err = ch ? errno : ENOMEM;
        free(ch);
        errno = err;
        return NULL;
    }
    /* The service thread writes events while holding the lock: it must never block there. */
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    ch->ch.context = context;
    ch->ch.fd = fds[0];
    ch->wfd = fds[1];
    pthread_mutex_lock(&softverbs__lock);
    ((sv_context *)context)->nchannel++;
    pthread_mutex_unlock(&softverbs__lock);
    return &ch->ch;
}

SV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    sv_channel *ch = (sv_channel *)channel;
    int busy;
    pthread_mutex_lock(&softverbs__lock);
    busy = ch->ncq;
    if (!busy)
        ((sv_context *)channel->context)->nchannel--;
    pthread_mutex_unlock(&softverbs__lock);
    if (busy)
        return softverbs__fail(EBUSY, "ibv_destroy_comp_channel: %d CQs still use it", busy);
    close(ch->ch.fd);
    close(ch->wfd);
    free(ch);
    return 0;
}

static int cq_allowed(sv_context *c, int cqe, struct ibv_comp_channel *channel, int comp_vector)
{
    const sv_profile *p = &softverbs__env.prof;
    if (cqe < 1 || cqe > p->max_cqe)
        return softverbs__fail(EINVAL, "ibv_create_cq(%s): cqe %d not in [1, %d]", c->dev->dev.name,
                               cqe, p->max_cqe);
    if (comp_vector != 0)
        return softverbs__fail(EINVAL, "ibv_create_cq(%s): comp_vector %d, the only one is 0",
                               c->dev->dev.name, comp_vector);
    if (channel && channel->context != &c->ctx)
        return softverbs__fail(EINVAL, "ibv_create_cq(%s): channel of another context",
                               c->dev->dev.name);
    if (c->ncq >= p->max_cq)
        return softverbs__fail(ENOMEM, "ibv_create_cq(%s): %d CQs already", c->dev->dev.name,
                               c->ncq);
    return 0;
}

SV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                       struct ibv_comp_channel *channel, int comp_vector)
{
    sv_context *c = (sv_context *)context;
    sv_cq *q = NULL;
    int rc;
    pthread_mutex_lock(&softverbs__lock);
    rc = cq_allowed(c, cqe, channel, comp_vector);
    if (!rc && (!(q = calloc(1, sizeof *q)) || !(q->ring = calloc((size_t)cqe, sizeof *q->ring)))) {
        free(q);
        q = NULL;
        rc = ENOMEM;
    }
    if (!rc) {
        q->cq.context = context;
        q->cq.channel = channel;
        q->cq.cq_context = cq_context;
        q->cq.cqe = cqe;
        q->cap = cqe;
        q->next = softverbs__cqs;
        softverbs__cqs = q;
        c->ncq++;
        if (channel)
            ((sv_channel *)channel)->ncq++;
    }
    pthread_mutex_unlock(&softverbs__lock);
    errno = rc;
    return q ? &q->cq : NULL;
}

SV_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
    sv_cq *q = (sv_cq *)cq, **pp;
    int rc = 0;
    pthread_mutex_lock(&softverbs__lock);
    if (q->nqp)
        rc = softverbs__fail(EBUSY, "ibv_destroy_cq: %d QPs still use it", q->nqp);
    else if (q->events != cq->comp_events_completed)
        rc = softverbs__fail(EBUSY,
                             "ibv_destroy_cq: %u events not acknowledged "
                             "(ibv_ack_cq_events)",
                             q->events - cq->comp_events_completed);
    if (!rc) {
        for (pp = &softverbs__cqs; *pp != q; pp = &(*pp)->next)
            ;
        *pp = q->next;
        ((sv_context *)cq->context)->ncq--;
        if (cq->channel)
            ((sv_channel *)cq->channel)->ncq--;
    }
    pthread_mutex_unlock(&softverbs__lock);
    if (rc)
        return rc;
    free(q->ring);
    free(q);
    return 0;
}

static sv_cq *live_cq(const struct ibv_cq *p)
{
    sv_cq *q = softverbs__cqs;
    while (q && &q->cq != p)
        q = q->next;
    return q;
}

/* Events of a CQ destroyed before they were read are skipped: the kernel drops those too. */
SV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                               void **cq_context)
{
    struct ibv_cq *p;
    sv_cq *q = NULL;
    while (!q) {
        /* Blocks only if the caller left the fd blocking, as with the real library. */
        if (read(channel->fd, &p, sizeof p) != (ssize_t)sizeof p)
            return -1;
        pthread_mutex_lock(&softverbs__lock);
        if ((q = live_cq(p)) != NULL)
            q->events++;
        pthread_mutex_unlock(&softverbs__lock);
    }
    *cq = p;
    *cq_context = p->cq_context;
    return 0;
}

SV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&softverbs__lock);
    cq->comp_events_completed += nevents;
    pthread_mutex_unlock(&softverbs__lock);
}
