/* tests/support/memtransport.c - an in-process tether transport: ranks are threads, messages are
 * copies.
 *
 * A hub (one per job token) holds an endpoint per rank. Every endpoint keeps, per source rank, the
 * receives it posted that no message matched yet (posted) and the sends addressed to it that no
 * receive matched yet (unexpected). A new message or receive scans the other queue in order; a
 * match copies the bytes and completes both requests at once. One mutex guards the whole hub; a
 * counter of events plus a condition variable lets wait() sleep without missing a completion. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memtransport.h"

typedef struct memt_hub memt_hub;

struct tether__req {
    tether__req *next;                /* in the queue it waits in */
    tether__req *own_prev, *own_next; /* in its endpoint's list of live requests */
    tether__ep *owner;
    int sending;
    int peer; /* world rank at the other end */
    const void *sbuf;
    void *rbuf;
    size_t len;
    tether__tag tag;
    int done;
    int queued;
};

typedef struct memt_queue {
    tether__req *head, *tail;
} memt_queue;

struct tether__ep {
    memt_hub *hub;
    int rank;
    int joined, closed;
    int broken; /* sticky error code, 0 while healthy */
    char broken_msg[TETHER__ERRMSG_MAX];
    long fail_after; /* sends left before the injected fault; < 0: none */
    unsigned caps;
    tether__req *owned;     /* every live request, freed by close() if never released */
    memt_queue *posted;     /* [src]: receives waiting for a message */
    memt_queue *unexpected; /* [src]: messages waiting for a receive */
    long *sent;             /* [dst]: sends posted so far */
    uint32_t seq_bits;      /* every collective send's tag.seq, or'ed */
};

struct memt_hub {
    memt_hub *next; /* in the registry */
    char token[TETHER__TOKEN_MAX];
    int size;
    int refs; /* ranks that have not closed yet: the hub lives until every rank of the world closed,
                 so a rank that opens late still finds the others' messages (and errors) */
    unsigned long events; /* completions and breaks so far: wait() sleeps until it moves */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    tether__ep *eps;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static memt_hub *registry;

/* ---- hub lifetime ---- */

static void hub_free(memt_hub *h)
{
    for (int r = 0; r < h->size; r++) {
        free(h->eps[r].posted);
        free(h->eps[r].unexpected);
        free(h->eps[r].sent);
    }
    free(h->eps);
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

static memt_hub *hub_new(const char *token, int size)
{
    memt_hub *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    snprintf(h->token, sizeof h->token, "%s", token);
    h->size = size;
    h->refs = size;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    h->eps = calloc((size_t)size, sizeof *h->eps);
    int ok = h->eps != NULL;
    for (int r = 0; ok && r < size; r++) {
        tether__ep *ep = &h->eps[r];
        ep->hub = h;
        ep->rank = r;
        ep->fail_after = -1;
        ep->caps = TETHER__CAP_DIRECT;
        ep->posted = calloc((size_t)size, sizeof *ep->posted);
        ep->unexpected = calloc((size_t)size, sizeof *ep->unexpected);
        ep->sent = calloc((size_t)size, sizeof *ep->sent);
        ok = ep->posted && ep->unexpected && ep->sent;
    }
    if (!ok) {
        hub_free(h);
        return NULL;
    }
    return h;
}

/* The hub of token, created on first use. Called with registry_lock held. */
static int hub_join(const tether__config *cfg, memt_hub **out)
{
    memt_hub *h = registry;
    while (h && strcmp(h->token, cfg->job_token) != 0)
        h = h->next;
    if (!h) {
        h = hub_new(cfg->job_token, cfg->size);
        if (!h)
            return tether__fail(TETHER_ENOMEM, "memtransport: out of memory for a world of %d",
                                cfg->size);
        h->next = registry;
        registry = h;
    }
    if (h->size != cfg->size)
        return tether__fail(TETHER_ECONFIG,
                            "memtransport: rank %d says size %d, world \"%s\" has %d", cfg->rank,
                            cfg->size, cfg->job_token, h->size);
    if (h->eps[cfg->rank].joined)
        return tether__fail(TETHER_ECONFIG, "memtransport: rank %d of world \"%s\" opened twice",
                            cfg->rank, cfg->job_token);
    *out = h;
    return TETHER_OK;
}

static void hub_unregister(memt_hub *h)
{
    memt_hub **p = &registry;
    while (*p != h)
        p = &(*p)->next;
    *p = h->next;
}

/* ---- queues and breaking, all under the hub lock ---- */

static void enqueue(memt_queue *q, tether__req *r)
{
    r->next = NULL;
    r->queued = 1;
    if (q->tail)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
}

static void unlink_req(memt_queue *q, tether__req *r)
{
    tether__req *prev = NULL;
    for (tether__req *x = q->head; x; prev = x, x = x->next) {
        if (x != r)
            continue;
        if (prev)
            prev->next = r->next;
        else
            q->head = r->next;
        if (q->tail == r)
            q->tail = prev;
        r->queued = 0;
        return;
    }
}

/* The queue a pending request waits in: a receive at its owner, a send at its destination. */
static memt_queue *queue_of(tether__req *r)
{
    tether__ep *owner = r->owner;
    if (r->sending)
        return &owner->hub->eps[r->peer].unexpected[owner->rank];
    return &owner->posted[r->peer];
}

static void release(tether__req *r)
{
    if (r->queued)
        unlink_req(queue_of(r), r);
    if (r->own_prev)
        r->own_prev->own_next = r->own_next;
    else
        r->owner->owned = r->own_next;
    if (r->own_next)
        r->own_next->own_prev = r->own_prev;
    free(r);
}

static void notify(memt_hub *h)
{
    h->events++;
    pthread_cond_broadcast(&h->cond);
}

static void break_ep(tether__ep *ep, int code, const char *msg)
{
    if (ep->broken)
        return;
    ep->broken = code;
    snprintf(ep->broken_msg, sizeof ep->broken_msg, "%s", msg);
    notify(ep->hub);
}

/* Every other rank learns that rank `who` is gone, as peers of a dead process would; one that has
 * not opened yet finds out on its first message (its peers never completed a handshake with it). */
static void break_others(memt_hub *h, int who, const char *why)
{
    char msg[TETHER__ERRMSG_MAX];
    snprintf(msg, sizeof msg, "memtransport: rank %d failed: %.900s", who, why);
    for (int r = 0; r < h->size; r++)
        if (r != who && !h->eps[r].closed)
            break_ep(&h->eps[r], TETHER_EPEER, msg);
}

static int same_call(tether__tag a, tether__tag b)
{
    return a.group == b.group && a.seq == b.seq;
}

static int same_msg(tether__tag a, tether__tag b)
{
    return same_call(a, b) && a.step == b.step;
}

/* Copy a matched message, complete both requests. A different signature or length breaks the
 * receiver with TETHER_EMISMATCH naming both values. */
static void deliver(tether__req *send, tether__req *recv)
{
    tether__ep *dst = recv->owner;
    unlink_req(queue_of(send), send);
    unlink_req(queue_of(recv), recv);
    if (send->tag.sig != recv->tag.sig || send->len != recv->len) {
        char msg[TETHER__ERRMSG_MAX];
        snprintf(msg, sizeof msg,
                 "memtransport: rank %d sent %zu bytes with signature %08x (call %u step %u) where "
                 "rank %d "
                 "expected %zu bytes with signature %08x: the ranks called different collectives, "
                 "counts, dtypes, ops or roots, in this call or an earlier collective",
                 send->owner->rank, send->len, send->tag.sig, send->tag.seq, send->tag.step,
                 dst->rank, recv->len, recv->tag.sig);
        break_ep(dst, TETHER_EMISMATCH, msg);
        return;
    }
    if (send->len)
        memcpy(recv->rbuf, send->sbuf, send->len);
    send->done = recv->done = 1;
    notify(dst->hub);
}

/* The first request of q that r matches; a request of the same call with another signature breaks
 * the receiving endpoint (the transport contract: mismatched collectives fail, never hang). */
static tether__req *find_match(memt_queue *q, tether__req *r, tether__ep *receiver)
{
    for (tether__req *x = q->head; x; x = x->next) {
        if (same_call(x->tag, r->tag) && x->tag.sig != r->tag.sig) {
            tether__req *s = r->sending ? r : x, *v = r->sending ? x : r;
            char msg[TETHER__ERRMSG_MAX];
            snprintf(
                msg, sizeof msg,
                "memtransport: rank %d's call %u has signature %08x but rank %d's "
                "has %08x: the ranks called different collectives, counts, dtypes, ops or roots, "
                "in this call or an earlier collective",
                s->owner->rank, s->tag.seq, s->tag.sig, v->owner->rank, v->tag.sig);
            break_ep(receiver, TETHER_EMISMATCH, msg);
            return NULL;
        }
        if (same_msg(x->tag, r->tag))
            return x;
    }
    return NULL;
}

/* ---- the vtable ---- */

static int memt_configured(const tether__config *cfg, char *why, size_t why_len)
{
    if (cfg->job_token[0])
        return 1;
    snprintf(why, why_len, "memtransport needs a job token to name its world");
    return 0;
}

static int memt_open(const tether__config *cfg, tether__ep **out, int *rank, int *size)
{
    if (cfg->size < 1 || cfg->rank < 0 || cfg->rank >= cfg->size || !cfg->job_token[0])
        return tether__fail(TETHER_ECONFIG,
                            "memtransport: rank %d of size %d with token \"%s\": need "
                            "0 <= rank < size and a token",
                            cfg->rank, cfg->size, cfg->job_token);
    pthread_mutex_lock(&registry_lock);
    memt_hub *h = NULL;
    int rc = hub_join(cfg, &h);
    if (rc == TETHER_OK) {
        pthread_mutex_lock(&h->lock);
        h->eps[cfg->rank].joined = 1;
        pthread_mutex_unlock(&h->lock);
        *out = &h->eps[cfg->rank];
        *rank = cfg->rank;
        *size = cfg->size;
    }
    pthread_mutex_unlock(&registry_lock);
    return rc;
}

static unsigned memt_caps(const tether__ep *ep)
{
    return ep->caps;
}

/* Checks shared by isend and irecv: a broken endpoint, a peer that has closed. */
static int post_check(tether__ep *ep, int peer, const char *what)
{
    memt_hub *h = ep->hub;
    if (peer < 0 || peer >= h->size || peer == ep->rank)
        return tether__fail(TETHER_EINTERNAL, "memtransport: rank %d: %s with peer %d of %d",
                            ep->rank, what, peer, h->size);
    if (!ep->broken && h->eps[peer].closed) {
        char msg[TETHER__ERRMSG_MAX];
        snprintf(msg, sizeof msg,
                 "memtransport: rank %d: %s rank %d, which has closed its endpoint", ep->rank, what,
                 peer);
        break_ep(ep, TETHER_EPEER, msg);
    }
    if (ep->broken)
        return tether__fail(ep->broken, "%s", ep->broken_msg);
    return TETHER_OK;
}

static int inject_fault(tether__ep *ep, int peer)
{
    if (ep->fail_after < 0 || ep->fail_after-- > 0)
        return TETHER_OK;
    char msg[TETHER__ERRMSG_MAX];
    snprintf(msg, sizeof msg, "memtransport: injected fault: rank %d's send to rank %d failed",
             ep->rank, peer);
    break_ep(ep, TETHER_ENET, msg);
    break_others(ep->hub, ep->rank, msg);
    return tether__fail(TETHER_ENET, "%s", msg);
}

static tether__req *req_new(tether__ep *ep, int sending, int peer, size_t len, tether__tag tag)
{
    tether__req *r = calloc(1, sizeof *r);
    if (r) {
        r->owner = ep;
        r->sending = sending;
        r->peer = peer;
        r->len = len;
        r->tag = tag;
        r->own_next = ep->owned;
        if (ep->owned)
            ep->owned->own_prev = r;
        ep->owned = r;
    }
    return r;
}

static int memt_isend(tether__ep *ep, int peer, const void *buf, size_t len, tether__tag tag,
                      tether__req **out)
{
    memt_hub *h = ep->hub;
    pthread_mutex_lock(&h->lock);
    int rc = post_check(ep, peer, "send to");
    if (rc == TETHER_OK)
        rc = inject_fault(ep, peer);
    tether__req *r = rc == TETHER_OK ? req_new(ep, 1, peer, len, tag) : NULL;
    if (rc == TETHER_OK && !r)
        rc = tether__fail(TETHER_ENOMEM, "memtransport: out of memory for a send");
    if (r) {
        r->sbuf = buf;
        ep->sent[peer]++;
        if (!(tag.seq & TETHER__TAG_P2P))
            ep->seq_bits |= tag.seq;
        tether__ep *dst = &h->eps[peer];
        enqueue(&dst->unexpected[ep->rank], r);
        tether__req *recv = find_match(&dst->posted[ep->rank], r, dst);
        if (recv)
            deliver(r, recv);
        *out = r;
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

static int memt_irecv(tether__ep *ep, int peer, void *buf, size_t len, tether__tag tag,
                      tether__req **out)
{
    memt_hub *h = ep->hub;
    pthread_mutex_lock(&h->lock);
    int rc = post_check(ep, peer, "receive from");
    tether__req *r = rc == TETHER_OK ? req_new(ep, 0, peer, len, tag) : NULL;
    if (rc == TETHER_OK && !r)
        rc = tether__fail(TETHER_ENOMEM, "memtransport: out of memory for a receive");
    if (r) {
        r->rbuf = buf;
        enqueue(&ep->posted[peer], r);
        tether__req *send = find_match(&ep->unexpected[peer], r, ep);
        if (send)
            deliver(send, r);
        *out = r;
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

/* What this thread last saw of its endpoint's events, so wait() returns at once when something
 * completed between the caller's test() and its wait() (no lost wake-up). */
static _Thread_local const tether__ep *seen_ep;
static _Thread_local unsigned long seen_events;
static _Thread_local int seen_armed;

static int memt_test(tether__ep *ep, tether__req *r, int *done)
{
    memt_hub *h = ep->hub;
    int rc = TETHER_OK;
    pthread_mutex_lock(&h->lock);
    if (!seen_armed || seen_ep != ep) {
        seen_ep = ep;
        seen_events = h->events;
        seen_armed = 1;
    }
    *done = r->done;
    if (r->done) {
        release(r);
    } else if (ep->broken) {
        release(r);
        rc = tether__fail(ep->broken, "%s", ep->broken_msg);
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

static int memt_wait(tether__ep *ep, int timeout_ms)
{
    memt_hub *h = ep->hub;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&h->lock);
    unsigned long since = (seen_armed && seen_ep == ep) ? seen_events : h->events;
    int rc = 0;
    while (h->events == since && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&h->cond, &h->lock, &until);
    seen_armed = 0;
    pthread_mutex_unlock(&h->lock);
    return TETHER_OK;
}

static void memt_abort(tether__ep *ep, int code, const char *msg)
{
    memt_hub *h = ep->hub;
    pthread_mutex_lock(&h->lock);
    break_ep(ep, code, msg);
    break_others(h, ep->rank, msg);
    pthread_mutex_unlock(&h->lock);
}

/* Free every request of ep still alive; peers waiting on ep fail as on a closed connection. */
static void drop_pending(tether__ep *ep)
{
    memt_hub *h = ep->hub;
    char msg[TETHER__ERRMSG_MAX];
    snprintf(msg, sizeof msg, "memtransport: rank %d closed its endpoint with messages pending",
             ep->rank);
    while (ep->owned)
        release(ep->owned);
    for (int p = 0; p < h->size; p++)
        if (ep->unexpected[p].head || h->eps[p].posted[ep->rank].head)
            break_ep(&h->eps[p], TETHER_EPEER, msg);
}

static void memt_close(tether__ep *ep)
{
    memt_hub *h = ep->hub;
    pthread_mutex_lock(&registry_lock);
    pthread_mutex_lock(&h->lock);
    drop_pending(ep);
    ep->closed = 1;
    int last = --h->refs == 0;
    notify(h);
    pthread_mutex_unlock(&h->lock);
    if (last)
        hub_unregister(h);
    pthread_mutex_unlock(&registry_lock);
    if (last)
        hub_free(h);
}

void tether__memt_fail_sends_after(tether__ep *ep, long after)
{
    pthread_mutex_lock(&ep->hub->lock);
    ep->fail_after = after;
    pthread_mutex_unlock(&ep->hub->lock);
}

long tether__memt_sent(tether__ep *ep, int peer)
{
    pthread_mutex_lock(&ep->hub->lock);
    long n = ep->sent[peer];
    pthread_mutex_unlock(&ep->hub->lock);
    return n;
}

uint32_t tether__memt_seq_bits(tether__ep *ep)
{
    pthread_mutex_lock(&ep->hub->lock);
    uint32_t bits = ep->seq_bits;
    pthread_mutex_unlock(&ep->hub->lock);
    return bits;
}

void tether__memt_set_caps(tether__ep *ep, unsigned caps)
{
    ep->caps = caps; /* set by the owning thread before its first collective */
}

const tether__transport_ops tether__memt_ops = {
    .name = "memtransport",
    .configured = memt_configured,
    .usable = NULL,
    .open = memt_open,
    .caps = memt_caps,
    .isend = memt_isend,
    .irecv = memt_irecv,
    .test = memt_test,
    .wait = memt_wait,
    .abort = memt_abort,
    .close = memt_close,
};
