/* backends/tcp/cma.c - cross-memory attach between ranks of one host (the protocol: cma.h). */
#include "cma.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/platform.h"
#include "backends/net/socket.h"
#include "backends/net/wire.h"

#if TETHER_LINUX
#include <sys/random.h>
#endif

#define CMA_MIN_DEFAULT 262144L /* below it, the read notice costs more than the copy saves */

/* Bumped when an endpoint withdraws descriptors its peers may still read (cma.h). */
static _Atomic uint64_t withdraw_epoch = 1;

/* What a peer reads back to prove that it reaches this process's memory. */
static uint64_t cookie;
static pthread_once_t cookie_once = PTHREAD_ONCE_INIT;

static void cookie_init(void)
{
#if TETHER_LINUX
    if (getrandom(&cookie, sizeof cookie, GRND_NONBLOCK) == (ssize_t)sizeof cookie && cookie)
        return;
#endif
    cookie = (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)&cookie ^ 0x9e3779b97f4a7c15u;
}

int tether__cma_min(uint64_t *out)
{
    long v;
#if TETHER_LINUX
    TRY(tether__env_long("TETHER_TCP_CMA_MIN", CMA_MIN_DEFAULT, 0, 1L << 40, &v));
#else
    v = 0; /* no process_vm_readv: every message goes through the socket */
#endif
    *out = (uint64_t)v;
    return TETHER_OK;
}

/* Queue a frame the link owns (no request), with n payload bytes copied after it. */
static int queue_frame(tether__tcp_ep *ep, tether__link *l, const tether__frame *f,
                       const void *payload, size_t n)
{
    tether__txmsg *t = calloc(1, sizeof *t + n);
    if (!t)
        return tether__tcp_break(ep, TETHER_ENOMEM, "out of memory for a frame to rank %d",
                                 l->peer);
    if (n)
        memcpy(t + 1, payload, n);
    tether__frame_encode(f, t->hdr);
    t->payload = (const unsigned char *)(t + 1);
    t->len = n;
    return tether__tcp_tx_queue(ep, l, t);
}

/* Our offer: pid, cookie, epoch cell; empty (full = 0) when this rank does not take part. */
static int send_offer(tether__tcp_ep *ep, tether__link *l, int full)
{
    unsigned char p[TETHER__CMA_OFFER_SIZE];
    tether__frame f = {.len = full ? sizeof p : 0, .type = TETHER__FRAME_CMA_OFFER};
    tether__put_u64(p, (uint64_t)getpid());
    tether__put_u64(p + 8, (uint64_t)(uintptr_t)&cookie);
    tether__put_u64(p + 16, cookie);
    tether__put_u64(p + 24, (uint64_t)(uintptr_t)&withdraw_epoch);
    l->cma_offered = full ? 2 : 1; /* 2: an answer worth logging */
    l->cma_expected = 1;
    return queue_frame(ep, l, &f, p, (size_t)f.len);
}

static int negotiating(const tether__link *l)
{
    return l->cma_offered || l->cma_expected;
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
            pfd[n] = (struct pollfd){.fd = l->fd, .events = POLLIN | (l->txhead ? POLLOUT : 0)};
            ls[n++] = l;
        }
    }
    pthread_mutex_unlock(&ep->mu);
    if (poll(pfd, (nfds_t)n, ms) < 0 && errno != EINTR)
        return tether__fail(TETHER_ENET, "poll() on %d links: %s", n, strerror(errno));
    pthread_mutex_lock(&ep->mu);
    for (int i = 0; i < n && !ep->err; i++) {
        if ((pfd[i].revents & POLLOUT) && ls[i]->txhead)
            tether__tcp_flush(ep, ls[i]);
        if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
            tether__tcp_read(ep, ls[i], 0);
    }
    int rc = ep->err ? tether__fail(ep->err, "%s", ep->errmsg) : TETHER_OK;
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

int tether__cma_negotiate(tether__tcp_ep *ep, int timeout_ms)
{
    pthread_once(&cookie_once, cookie_init);
    pthread_mutex_lock(&ep->mu);
    int rc = TETHER_OK;
    /* every link exchanges offers, empty where this side sees another host: both sides then wait
     * for the same frames even where they disagree on that (an address translated on the way) */
    for (int peer = 0; peer < ep->size && rc == TETHER_OK; peer++)
        if (ep->nlinks[peer] > 0)
            rc = send_offer(ep, &ep->links[peer][0],
                            ep->cma_min && tether__net_same_host(ep->links[peer][0].fd));
    if (rc < 0) /* the break recorded why; the caller reports it */
        rc = tether__fail(rc, "%s", ep->errmsg);
    pthread_mutex_unlock(&ep->mu);
    TRY(rc);
    struct pollfd *pfd = malloc((size_t)ep->size * sizeof *pfd);
    tether__link **ls = malloc((size_t)ep->size * sizeof *ls);
    if (!pfd || !ls)
        rc = tether__fail(TETHER_ENOMEM, "out of memory for the links of %d ranks", ep->size);
    int64_t deadline = tether__net_now_ms() + timeout_ms;
    for (int peer; rc == TETHER_OK && (peer = first_negotiating(ep)) >= 0;) {
        int64_t left = deadline - tether__net_now_ms();
        if (left > 0) {
            rc = negotiate_step(ep, pfd, ls, (int)(left < 100 ? left : 100));
            continue;
        }
        pthread_mutex_lock(&ep->mu);
        rc = tether__tcp_break(ep, TETHER_ETIMEDOUT,
                               "rank %d (%s) formed its link but sent no memory offer or "
                               "answer within %d s: is it stopped?",
                               peer, ep->addr[peer], timeout_ms / 1000);
        rc = tether__fail(rc, "%s", ep->errmsg);
        pthread_mutex_unlock(&ep->mu);
    }
    free(pfd);
    free(ls);
    return rc;
}

int tether__cma_use(const tether__tcp_ep *ep, int peer, uint64_t len)
{
    return ep->cma_min && len >= ep->cma_min && ep->nlinks[peer] > 0 && ep->links[peer][0].cma_on;
}

int tether__tcp_reads_memory(const tether__tcp_ep *ep)
{
    /* only facts the peers share: with TETHER_TCP_CMA_MIN=0 this rank answered no to every offer,
     * but its value otherwise is its own, so it does not count */
    if (!ep->cma_min)
        return 0;
    for (int p = 0; p < ep->size; p++)
        if (p != ep->rank &&
            !(ep->nlinks[p] > 0 && ep->links[p][0].cma_on && ep->links[p][0].cma_read))
            return 0;
    return 1;
}

void tether__cma_describe(tether__link *l, tether__txmsg *t, const tether__frame *f,
                          const unsigned char *payload)
{
    tether__frame d = *f;
    d.type = TETHER__FRAME_CMA_DATA;
    tether__frame_encode(&d, t->hdr);
    t->cma_id = ++l->cma_next_id;
    tether__put_u64(t->cma_desc, (uint64_t)(uintptr_t)payload);
    tether__put_u64(t->cma_desc + 8, t->cma_id);
    tether__put_u64(t->cma_desc + 16, atomic_load(&withdraw_epoch));
    t->payload = t->cma_desc;
    t->len = TETHER__CMA_DESC_SIZE;
    t->cma_next = l->cma_wait;
    l->cma_wait = t;
    t->req->parts_left++; /* the CMA_DONE */
}

int tether__cma_wants_input(const tether__link *l)
{
    return l->cma_offered || l->cma_expected || l->cma_wait != NULL;
}

/* ---- the reader's side ---- */

#if TETHER_LINUX
/* Read n bytes at addr of the peer's memory into dst; 0, or the errno. */
static int read_peer(pid_t pid, void *dst, uint64_t addr, uint64_t n, uint64_t max_io)
{
    uint64_t done = 0;
    while (done < n) {
        size_t k = (size_t)(n - done < max_io ? n - done : max_io);
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

/* The offer (its payload in l->cma_buf, or empty): try to read the cookie back, then answer. */
static int take_offer(tether__tcp_ep *ep, tether__link *l)
{
    int yes = 0, e = ENOSYS;
    int64_t pid = (int64_t)tether__get_u64(l->cma_buf);
    l->cma_expected = 0;
#if TETHER_LINUX
    uint64_t seen = 0, want = tether__get_u64(l->cma_buf + 16);
    e = l->cma_hdr.len == 0 ? EPERM /* nothing offered */
        : ep->cma_min ? read_peer((pid_t)pid, &seen, tether__get_u64(l->cma_buf + 8), sizeof seen,
                                  sizeof seen)
                      : EPERM;
    yes = e == 0 && seen == want;
#endif
    if (yes) {
        l->cma_read = 1;
        l->cma_pid = pid;
        l->cma_epoch_addr = tether__get_u64(l->cma_buf + 24);
        TLOG_INFO("rank %d (%s) is on this host: rank %d reads its large messages from its memory "
                  "(process_vm_readv)",
                  l->peer, ep->addr[l->peer], ep->rank);
    } else if (l->cma_hdr.len > 0) { /* an empty offer: the peer's own log says why */
        TLOG_INFO("rank %d (%s) is on this host but rank %d cannot read its memory (%s): its "
                  "messages come through the socket",
                  l->peer, ep->addr[l->peer], ep->rank,
                  !ep->cma_min ? "TETHER_TCP_CMA_MIN=0"
                  : e          ? strerror(e)
                               : "another process answers at its pid");
    }
    tether__frame f = {.type = TETHER__FRAME_CMA_ANSWER, .code = yes};
    return queue_frame(ep, l, &f, NULL, 0);
}

/* Copy the stripe a descriptor names into dst, check that the sender still stood behind it, and
 * tell it the buffer is free. */
static int copy_stripe(tether__tcp_ep *ep, tether__link *l, void *dst, uint64_t n,
                       const unsigned char *desc)
{
    const tether__link *l0 = &ep->links[l->peer][0];
#if TETHER_LINUX
    uint64_t epoch = 0;
    int e = read_peer((pid_t)l0->cma_pid, dst, tether__get_u64(desc), n, ep->max_io);
    /* the epoch even after a failed read: a sender that withdrew may have freed the buffer since
     * (EFAULT), and then its failure, not the address, is what to report */
    int e_epoch =
        read_peer((pid_t)l0->cma_pid, &epoch, l0->cma_epoch_addr, sizeof epoch, sizeof epoch);
    if (!e_epoch && epoch != tether__get_u64(desc + 16))
        return tether__tcp_break(ep, TETHER_EPEER,
                                 "rank %d (%s) failed or closed while this rank read a message "
                                 "from its memory; what was read is discarded",
                                 l->peer, ep->addr[l->peer]);
    if (!e || e_epoch == ESRCH) /* ...or it exited since: then that is what to report */
        e = e_epoch ? e_epoch : e;
    if (e)
        return tether__tcp_break(ep, e == ESRCH ? TETHER_EPEER : TETHER_ENET,
                                 "reading %llu bytes of a message from the memory of rank %d (%s, "
                                 "pid %lld): %s%s",
                                 (unsigned long long)n, l->peer, ep->addr[l->peer],
                                 (long long)l0->cma_pid, strerror(e),
                                 e == ESRCH ? "; it probably exited, see its output" : "");
#else
    (void)dst;
    (void)l0;
#endif
    l->bytes_recvd += n;
    tether__frame f = {.len = tether__get_u64(desc + 8), .type = TETHER__FRAME_CMA_DONE};
    return queue_frame(ep, l, &f, NULL, 0);
}

/* The stripe of a message that link l carries. */
static uint64_t stripe_len(const tether__link *l, uint64_t msglen)
{
    uint64_t off, n;
    return tether__stripe(msglen, l->nlinks, l->index, &off, &n) ? n : 0;
}

/* A descriptor is read: into its posted receive, or kept until one is posted. */
static int take_descriptor(tether__tcp_ep *ep, tether__link *l)
{
    const tether__frame *f = &l->cma_hdr;
    tether__rxmsg *m;
    switch (tether__rxq_match(&l->posted, f->tag, f->len, &m)) {
    case TETHER__MATCH_OK:
        TRY(copy_stripe(ep, l, m->buf, m->len, l->cma_buf));
        tether__tcp_part_done(ep, m->req);
        return TETHER_OK;
    case TETHER__MATCH_NONE:
        if (!(m = tether__rxcache_get(&ep->rxcache, TETHER__CMA_DESC_SIZE)))
            return tether__tcp_break(ep, TETHER_ENOMEM, "out of memory for a message of rank %d",
                                     l->peer);
        memcpy(m->buf, l->cma_buf, TETHER__CMA_DESC_SIZE);
        m->tag = f->tag;
        m->msglen = f->len;
        m->got = TETHER__CMA_DESC_SIZE;
        m->cma = 1;
        l->cma_unread++;
        tether__rxq_push(&l->unexpected, m);
        return TETHER_OK;
    case TETHER__MATCH_SIG:
    case TETHER__MATCH_LEN:
        break;
    }
    tether__rxmsg got = {.tag = f->tag, .msglen = f->len};
    return tether__tcp_mismatch(ep, l, &got, m->tag, m->msglen);
}

int tether__cma_claim(tether__tcp_ep *ep, tether__link *l, tether__rxmsg *part, tether__rxmsg *m)
{
    l->cma_unread--;
    int rc = copy_stripe(ep, l, part->buf, part->len, m->buf);
    tether__rxcache_put(&ep->rxcache, m);
    if (rc == TETHER_OK)
        tether__tcp_part_done(ep, part->req);
    return rc;
}

/* The reader copied a stripe: its send part is done. */
static int rx_done_notice(tether__tcp_ep *ep, tether__link *l, uint64_t id)
{
    for (tether__txmsg **pp = &l->cma_wait; *pp; pp = &(*pp)->cma_next) {
        tether__txmsg *t = *pp;
        if (t->cma_id != id)
            continue;
        *pp = t->cma_next;
        tether__tcp_part_done(ep, t->req);
        return TETHER_OK;
    }
    return tether__tcp_protocol_error(ep, l, "a read notice for no message of ours");
}

int tether__cma_rx_start(tether__tcp_ep *ep, tether__link *l, const tether__frame *f)
{
    tether__link *l0 = &ep->links[l->peer][0];
    uint64_t payload = TETHER__CMA_DESC_SIZE;
    switch (f->type) {
    case TETHER__FRAME_CMA_ANSWER:
        if (l != l0 || !l->cma_offered)
            return tether__tcp_protocol_error(ep, l, "an answer to no offer");
        l->cma_on = f->code == 1 && l->cma_offered == 2;
        if (l->cma_offered == 2)
            TLOG_INFO("rank %d (%s) %s rank %d's large messages from its memory", l->peer,
                      ep->addr[l->peer], l->cma_on ? "reads" : "cannot read", ep->rank);
        l->cma_offered = 0;
        return TETHER_OK;
    case TETHER__FRAME_CMA_DONE:
        return rx_done_notice(ep, l, f->len);
    case TETHER__FRAME_CMA_OFFER:
        if (l != l0 || !l->cma_expected || (f->len != 0 && f->len != TETHER__CMA_OFFER_SIZE))
            return tether__tcp_protocol_error(ep, l, "a misplaced memory offer");
        if (f->len == 0) {
            l->cma_hdr = *f;
            return take_offer(ep, l);
        }
        payload = TETHER__CMA_OFFER_SIZE;
        break;
    case TETHER__FRAME_CMA_DATA:
        if (!l0->cma_read || !stripe_len(l, f->len))
            return tether__tcp_protocol_error(ep, l, "a message in memory this rank cannot read");
        break;
    default:
        return tether__tcp_protocol_error(ep, l, "unknown frame type");
    }
    l->cma_hdr = *f;
    l->cma_msg = (tether__rxmsg){.len = payload, .buf = l->cma_buf};
    l->cur = &l->cma_msg;
    l->cur_cma = 1;
    return TETHER_OK;
}

int tether__cma_rx_done(tether__tcp_ep *ep, tether__link *l)
{
    l->cur_cma = 0;
    return l->cma_hdr.type == TETHER__FRAME_CMA_OFFER ? take_offer(ep, l) : take_descriptor(ep, l);
}

void tether__cma_unblock(tether__tcp_ep *ep)
{
    for (int i = 0; i < ep->nflat && !ep->err; i++) {
        tether__link *l = ep->flat[i];
        for (tether__rxmsg **pp = &l->unexpected.head; *pp && l->cma_unread > 0;) {
            tether__rxmsg *m = *pp, *copy;
            if (!m->cma) {
                pp = &m->next;
                continue;
            }
            uint64_t n = stripe_len(l, m->msglen);
            if (!tether__rxcache_admits(&ep->rxcache, m->msglen, m->tag)) {
                tether__tcp_too_long(ep, l, m->msglen, m->tag);
                return;
            }
            if (!(copy = tether__rxcache_get(&ep->rxcache, n))) {
                tether__tcp_break(ep, TETHER_ENOMEM,
                                  "out of memory buffering %llu bytes from rank %d",
                                  (unsigned long long)n, l->peer);
                return;
            }
            if (copy_stripe(ep, l, copy->buf, n, m->buf) < 0) { /* the break emptied the queue */
                tether__rxcache_put(&ep->rxcache, copy);
                return;
            }
            copy->tag = m->tag;
            copy->msglen = m->msglen;
            copy->got = n;
            copy->next = m->next;
            *pp = copy;
            if (l->unexpected.tail == m)
                l->unexpected.tail = copy;
            l->cma_unread--;
            tether__rxcache_put(&ep->rxcache, m);
            pp = &copy->next;
        }
    }
}

void tether__cma_withdraw(tether__tcp_ep *ep)
{
    int any = 0;
    for (int i = 0; i < ep->nflat; i++) {
        any |= ep->flat[i]->cma_wait != NULL;
        ep->flat[i]->cma_wait = NULL;
    }
    if (any)
        atomic_fetch_add(&withdraw_epoch, 1);
}
