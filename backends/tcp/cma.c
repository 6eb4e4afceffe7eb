/* backends/tcp/cma.c - cross-memory attach between ranks of one host (the protocol: cma.h). */
#include "cma.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"
#include "core/params.h"
#include "core/platform.h"
#include "core/wire.h"

#if TETHER__LINUX
#include <sys/random.h>
#endif

/* Bumped when an endpoint withdraws descriptors its peers may still read (cma.h). */
static _Atomic uint64_t withdraw_epoch = 1;

/* What a peer reads back to prove that it reaches this process's memory. */
static uint64_t cookie;
static pthread_once_t cookie_once = PTHREAD_ONCE_INIT;

static void cookie_init(void)
{
#if TETHER__LINUX
    if (getrandom(&cookie, sizeof cookie, GRND_NONBLOCK) == (ssize_t)sizeof cookie && cookie)
        return;
#endif
    cookie = (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&cookie ^ 0x9e3779b97f4a7c15u;
}

int tether__cma_min(uint64_t *out)
{
    long v;
#if TETHER__LINUX
    TRY(tether__param_long(TETHER__P_TCP_CMA_MIN, &v));
#else
    v = 0; /* no process_vm_readv: every message goes through the socket */
#endif
    *out = (uint64_t)v;
    return TETHER_OK;
}

/* A failure for the engine to report as it is. */
static void fail(tether__cma_todo *t, int code, const char *fmt, ...) TETHER__PRINTF(3, 4);
static void fail(tether__cma_todo *t, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->why, sizeof t->why, fmt, ap);
    va_end(ap);
    t->fail = TETHER__CMA_FAIL;
    t->code = code;
}

static void malformed(tether__cma_todo *t, const char *what)
{
    t->fail = TETHER__CMA_MALFORMED;
    t->what = what;
}

/* A frame back to the peer: a header, and n bytes of payload. */
static void reply(tether__cma_todo *t, const tether__frame *f, const void *payload, size_t n)
{
    t->reply = 1;
    t->frame = *f;
    t->n = n;
    if (n)
        memcpy(t->payload, payload, n);
}

void tether__cma_offer(tether__cma_link *c, int full, tether__cma_todo *t)
{
    pthread_once(&cookie_once, cookie_init);
    unsigned char p[TETHER__CMA_OFFER_SIZE];
    tether__frame f = {.len = full ? sizeof p : 0, .type = TETHER__FRAME_CMA_OFFER};
    tether__put_u64(p, (uint64_t)getpid());
    tether__put_u64(p + 8, (uint64_t)(uintptr_t)&cookie);
    tether__put_u64(p + 16, cookie);
    tether__put_u64(p + 24, (uint64_t)(uintptr_t)&withdraw_epoch);
    c->offered = full ? 2 : 1; /* 2: an answer worth logging */
    c->expected = 1;
    reply(t, &f, p, (size_t)f.len);
}

int tether__cma_negotiating(const tether__cma_link *c0)
{
    return c0->offered || c0->expected;
}

int tether__cma_use(const tether__cma_link *c0, uint64_t min, uint64_t len)
{
    return min && len >= min && c0->on;
}

int tether__cma_both_ways(const tether__cma_link *c0)
{
    return c0->on && c0->read;
}

void tether__cma_describe(tether__cma_link *c, tether__cma_send *s, struct tether__req *req,
                          const tether__frame *f, const unsigned char *payload,
                          unsigned char hdr[TETHER__FRAME_SIZE])
{
    tether__frame d = *f;
    d.type = TETHER__FRAME_CMA_DATA;
    tether__frame_encode(&d, hdr);
    s->id = ++c->next_id;
    s->req = req;
    tether__put_u64(s->desc, (uint64_t)(uintptr_t)payload);
    tether__put_u64(s->desc + 8, s->id);
    tether__put_u64(s->desc + 16, atomic_load(&withdraw_epoch));
    s->next = c->wait;
    c->wait = s;
}

int tether__cma_wants_input(const tether__cma_link *c)
{
    return c->offered || c->expected || c->wait != NULL;
}

int tether__cma_sending(const tether__cma_link *c)
{
    return c->wait != NULL;
}

/* ---- the reader's side ---- */

#if TETHER__LINUX
/* Read n bytes at addr of the peer's memory into dst; 0, or the errno. Gigabytes take seconds, all
 * with the engine's lock held: the engine stands in for its heartbeat thread between steps. */
static int read_peer(pid_t pid, void *dst, uint64_t addr, uint64_t n, const tether__cma_at *at)
{
    uint64_t done = 0, step = at->step < at->max_io ? at->step : at->max_io;
    while (done < n) {
        if (done && at->busy)
            at->busy(at->ctx);
        size_t k = (size_t)(n - done < step ? n - done : step);
        struct iovec local = {(unsigned char *)dst + done, k};
        struct iovec remote = {(void *)(uintptr_t)(addr + done), k};
        ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return got < 0 ? errno : EIO;
        done += (uint64_t)got;
    }
    return 0;
}
#endif

/* The offer (its payload in c->buf, or empty): try to read the cookie back, then answer. */
static void take_offer(tether__cma_link *c, const tether__cma_at *at, tether__cma_todo *t)
{
    int yes = 0, e = ENOSYS;
    int64_t pid = (int64_t)tether__get_u64(c->buf);
    c->expected = 0;
#if TETHER__LINUX
    uint64_t seen = 0, want = tether__get_u64(c->buf + 16);
    e = EPERM; /* nothing offered, or TETHER_TCP_CMA_MIN=0 */
    if (c->hdr.len != 0 && at->min)
        e = read_peer((pid_t)pid, &seen, tether__get_u64(c->buf + 8), sizeof seen, at);
    yes = e == 0 && seen == want;
#endif
    if (yes) {
        c->read = 1;
        c->pid = pid;
        c->epoch_addr = tether__get_u64(c->buf + 24);
        TLOG_INFO("rank %d (%s) is on this host: rank %d reads its large messages from its memory "
                  "(process_vm_readv)",
                  at->peer, at->addr, at->rank);
    } else if (c->hdr.len > 0) { /* an empty offer: the peer's own log says why */
        TLOG_INFO("rank %d (%s) is on this host but rank %d cannot read its memory (%s%s): its "
                  "messages come through the socket",
                  at->peer, at->addr, at->rank,
                  !at->min ? TETHER__VAR(TCP_CMA_MIN)
                  : e      ? strerror(e)
                           : "another process answers at its pid",
                  !at->min ? "=0" : "");
    }
    tether__frame f = {.type = TETHER__FRAME_CMA_ANSWER, .code = yes};
    reply(t, &f, NULL, 0);
}

/* Copy the stripe a descriptor names into dst, check that the sender still stood behind it, and
 * tell it the buffer is free. */
static void copy_stripe(const tether__cma_link *c0, const tether__cma_at *at, void *dst, uint64_t n,
                        const unsigned char *desc, tether__cma_todo *t)
{
#if TETHER__LINUX
    uint64_t epoch = 0;
    int e = read_peer((pid_t)c0->pid, dst, tether__get_u64(desc), n, at);
    /* the epoch even after a failed read: a sender that withdrew may have freed the buffer since
     * (EFAULT), and then its failure, not the address, is what to report */
    int e_epoch = read_peer((pid_t)c0->pid, &epoch, c0->epoch_addr, sizeof epoch, at);
    if (!e_epoch && epoch != tether__get_u64(desc + 16)) {
        fail(t, TETHER_EPEER,
             "rank %d (%s) failed or closed while this rank read a message "
             "from its memory; what was read is discarded",
             at->peer, at->addr);
        return;
    }
    if (!e || e_epoch == ESRCH) /* ...or it exited since: then that is what to report */
        e = e_epoch ? e_epoch : e;
    if (e) {
        fail(t, e == ESRCH ? TETHER_EPEER : TETHER_ENET,
             "reading %llu bytes of a message from the memory of rank %d (%s, "
             "pid %lld): %s%s",
             (unsigned long long)n, at->peer, at->addr, (long long)c0->pid, strerror(e),
             e == ESRCH ? "; it probably exited, see its output" : "");
        return;
    }
#else
    (void)dst;
    (void)c0;
    (void)at;
#endif
    t->read += n;
    tether__frame f = {.len = tether__get_u64(desc + 8), .type = TETHER__FRAME_CMA_DONE};
    reply(t, &f, NULL, 0);
}

/* The stripe of a message that the link carries. */
static uint64_t stripe_len(const tether__cma_at *at, uint64_t msglen)
{
    uint64_t off, n;
    return tether__stripe(msglen, at->nlinks, at->index, &off, &n) ? n : 0;
}

/* A descriptor is read: into its posted receive, or kept until one is posted. */
static void take_descriptor(tether__cma_link *c, const tether__cma_link *c0,
                            const tether__cma_at *at, tether__rxq *posted, tether__rxq *unexpected,
                            tether__cma_todo *t)
{
    const tether__frame *f = &c->hdr;
    tether__rxmsg *m;
    switch (tether__rxq_match(posted, f->tag, f->len, &m)) {
    case TETHER__MATCH_OK:
        copy_stripe(c0, at, m->buf, m->len, c->buf, t);
        if (t->fail == TETHER__CMA_OK)
            t->done = m->req;
        return;
    case TETHER__MATCH_NONE:
        if (!(m = tether__rxcache_get(at->cache, TETHER__CMA_DESC_SIZE))) {
            fail(t, TETHER_ENOMEM, "out of memory for a message of rank %d", at->peer);
            return;
        }
        memcpy(m->buf, c->buf, TETHER__CMA_DESC_SIZE);
        m->tag = f->tag;
        m->msglen = f->len;
        m->got = TETHER__CMA_DESC_SIZE;
        m->cma = 1;
        c->unread++;
        tether__rxq_push(unexpected, m);
        return;
    case TETHER__MATCH_SIG:
    case TETHER__MATCH_LEN:
        break;
    }
    t->fail = TETHER__CMA_MISMATCH;
    t->tag = f->tag;
    t->len = f->len;
    t->want_tag = m->tag;
    t->want_len = m->msglen;
}

void tether__cma_claim(tether__cma_link *c, const tether__cma_link *c0, const tether__cma_at *at,
                       tether__rxmsg *part, tether__rxmsg *m, tether__cma_todo *t)
{
    c->unread--;
    copy_stripe(c0, at, part->buf, part->len, m->buf, t);
    tether__rxcache_put(at->cache, m);
    if (t->fail == TETHER__CMA_OK)
        t->done = part->req;
}

/* The reader copied a stripe: its send part is done. */
static void done_notice(tether__cma_link *c, uint64_t id, tether__cma_todo *t)
{
    for (tether__cma_send **pp = &c->wait; *pp; pp = &(*pp)->next) {
        tether__cma_send *s = *pp;
        if (s->id != id)
            continue;
        *pp = s->next;
        t->done = s->req;
        return;
    }
    malformed(t, "a read notice for no message of ours");
}

tether__rxmsg *tether__cma_rx_start(tether__cma_link *c, tether__cma_link *c0,
                                    const tether__cma_at *at, const tether__frame *f,
                                    tether__cma_todo *t)
{
    uint64_t payload = TETHER__CMA_DESC_SIZE;
    switch (f->type) {
    case TETHER__FRAME_CMA_ANSWER:
        if (c != c0 || !c->offered) {
            malformed(t, "an answer to no offer");
            return NULL;
        }
        c->on = f->code == 1 && c->offered == 2;
        if (c->offered == 2)
            TLOG_INFO("rank %d (%s) %s rank %d's large messages from its memory", at->peer,
                      at->addr, c->on ? "reads" : "cannot read", at->rank);
        c->offered = 0;
        return NULL;
    case TETHER__FRAME_CMA_DONE:
        done_notice(c, f->len, t);
        return NULL;
    case TETHER__FRAME_CMA_OFFER:
        if (c != c0 || !c->expected || (f->len != 0 && f->len != TETHER__CMA_OFFER_SIZE)) {
            malformed(t, "a misplaced memory offer");
            return NULL;
        }
        c->hdr = *f;
        if (f->len == 0) {
            take_offer(c, at, t);
            return NULL;
        }
        payload = TETHER__CMA_OFFER_SIZE;
        break;
    case TETHER__FRAME_CMA_DATA:
        if (!c0->read || !stripe_len(at, f->len)) {
            malformed(t, "a message in memory this rank cannot read");
            return NULL;
        }
        break;
    default:
        malformed(t, "unknown frame type");
        return NULL;
    }
    c->hdr = *f;
    c->msg = (tether__rxmsg){.len = payload, .buf = c->buf};
    return &c->msg;
}

void tether__cma_rx_done(tether__cma_link *c, tether__cma_link *c0, const tether__cma_at *at,
                         tether__rxq *posted, tether__rxq *unexpected, tether__cma_todo *t)
{
    if (c->hdr.type == TETHER__FRAME_CMA_OFFER)
        take_offer(c, at, t);
    else
        take_descriptor(c, c0, at, posted, unexpected, t);
}

int tether__cma_unblock(tether__cma_link *c, const tether__cma_link *c0, const tether__cma_at *at,
                        tether__rxq *unexpected, tether__cma_todo *t)
{
    tether__rxmsg **pp = &unexpected->head, *m, *copy;
    if (c->unread == 0)
        return 0;
    while (*pp && !(*pp)->cma)
        pp = &(*pp)->next;
    if (!(m = *pp))
        return 0;
    uint64_t n = stripe_len(at, m->msglen);
    if (!tether__rxcache_admits(at->cache, m->msglen, m->tag)) {
        t->fail = TETHER__CMA_TOO_LONG;
        t->tag = m->tag;
        t->len = m->msglen;
        return 1;
    }
    if (!(copy = tether__rxcache_get(at->cache, n))) {
        fail(t, TETHER_ENOMEM, "out of memory buffering %llu bytes from rank %d",
             (unsigned long long)n, at->peer);
        return 1;
    }
    copy_stripe(c0, at, copy->buf, n, m->buf, t);
    if (t->fail != TETHER__CMA_OK) { /* the break will empty the queue */
        tether__rxcache_put(at->cache, copy);
        return 1;
    }
    copy->tag = m->tag;
    copy->msglen = m->msglen;
    copy->got = n;
    copy->next = m->next;
    *pp = copy;
    if (unexpected->tail == m)
        unexpected->tail = copy;
    c->unread--;
    tether__rxcache_put(at->cache, m);
    return 1;
}

void tether__cma_rx_clear(tether__cma_link *c)
{
    c->unread = 0;
}

int tether__cma_forget(tether__cma_link *c)
{
    int any = c->wait != NULL;
    c->wait = NULL;
    return any;
}

void tether__cma_withdrew(void)
{
    atomic_fetch_add(&withdraw_epoch, 1);
}
