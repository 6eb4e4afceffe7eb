/* backends/tcp/engine.c - the endpoint's calls: sends queued, the helpers' answers applied,
 * requests (isend, irecv, test, cancel), what the links moved and give.
 *
 * The other half of the engine, engine_rx.c, reads and matches frames; the two call each other.
 * Beneath them, calling neither: the lanes of pairs with several links, with the flush of every
 * link (engine_lane.c), a link's queue written (engine_write.c), what a lane's sender keeps until
 * acknowledged (engine_kept.c), breaking the endpoint (engine_break.c). Above them: engine_wait.c
 * waits (in poll(), or for the progress thread, net/loop.h), engine_open.c and engine_close.c open
 * and close, engine_ctrl.c sends aborts and byes, engine_beat.c keeps the heartbeats. The memory
 * path (cma.h) and the routing rules (route.h) are helpers called from here that return what to
 * do. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "engine_break.h"
#include "engine_core.h"
#include "engine_fast.h"
#include "engine_impl.h"
#include "engine_lane.h"
#include "engine_rx.h"
#include "engine_shm.h"
#include "engine_write.h"

/* ---- queueing sends ---- */

/* Queue t, a chunk passing through, before the frames of this rank's own not yet begun: it drains
 * a held link behind it (engine_impl.h, TETHER__PASS_MAX). */
static void push_passing(tether__link *l, tether__txmsg *t)
{
    tether__txmsg **at = &l->txhead;
    if (*at && (*at)->sent) /* a frame half written goes on first */
        at = &(*at)->next;
    /* then the chunks passing through queued before, in order, and an ack put before them */
    while (*at && ((*at)->passing || (*at)->ack))
        at = &(*at)->next;
    t->next = *at;
    *at = t;
    if (!t->next)
        l->txtail = t;
}

int tether__tcp_tx_queue(tether__tcp_ep *ep, tether__link *l, tether__txmsg *t)
{
    int idle = l->txhead == NULL;
    if (t->passing)
        push_passing(l, t);
    else
        tether__tcp_tx_push(l, t);
    if (!idle) /* whoever flushes the frames ahead flushes this one too */
        return TETHER_OK;
    /* the short path: most small messages leave here, in one send */
    TRY(tether__tcp_flush(ep, l));
    tether__tcp_kick_for_room(ep, l);
    return TETHER_OK;
}

int tether__tcp_tx_owned(tether__tcp_ep *ep, tether__link *l, const tether__frame *f,
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

/* ---- the helpers' answers ---- */

tether__cma_at tether__tcp_cma_at(tether__tcp_ep *ep, const tether__link *l)
{
    return (tether__cma_at){.rank = ep->rank,
                            .peer = l->peer,
                            .addr = ep->addr[l->peer],
                            .index = l->index,
                            .nlinks = l->nlinks,
                            .min = ep->cma_min,
                            .max_io = ep->max_io,
                            .cache = &ep->rxcache,
                            .step = TETHER__BUSY_STEP,
                            .busy = ep->stand_in,
                            .ctx = ep};
}

int tether__tcp_apply(tether__tcp_ep *ep, tether__link *l, tether__cma_todo *t)
{
    switch (t->fail) {
    case TETHER__CMA_OK:
        break;
    case TETHER__CMA_FAIL:
        return tether__tcp_break(ep, t->code, "%s", t->why);
    case TETHER__CMA_MALFORMED:
        return tether__tcp_protocol_error(ep, l, t->what);
    case TETHER__CMA_MISMATCH:
        return tether__tcp_mismatch(ep, l, t->tag, t->len, t->want_tag, t->want_len);
    case TETHER__CMA_TOO_LONG:
        return tether__tcp_too_long(ep, l, t->len, t->tag);
    }
    l->bytes_recvd += t->read;
    l->payload_recvd += t->read;
    if (t->reply)
        TRY(tether__tcp_tx_owned(ep, l, &t->frame, t->payload, t->n));
    if (t->done)
        tether__tcp_part_done(ep, t->done);
    return TETHER_OK;
}

tether__link *tether__tcp_hop(tether__tcp_ep *ep, int peer)
{
    return &ep->links[tether__route_hop(&ep->routes, peer)][0];
}

/* ---- requests ---- */

static int check_peer(const tether__tcp_ep *ep, int peer)
{
    if (peer < 0 || peer >= ep->size || peer == ep->rank)
        return tether__fail(TETHER_EINTERNAL, "%s: message to rank %d from rank %d of %d",
                            ep->backend, peer, ep->rank, ep->size);
    return TETHER_OK;
}

/* k parts: one per link to the peer; a routed send one per chunk (frame.h), its receive one. */
static struct tether__req *req_new(tether__tcp_ep *ep, int peer, int is_send, uint64_t k)
{
    struct tether__req *r;
    if (k > INT_MAX || k > (SIZE_MAX - sizeof *r) / sizeof r->part[0]) /* parts_left counts them */
        return NULL;
    r = k == 1 && ep->nspare > 0 ? ep->spare[--ep->nspare]
                                 : malloc(sizeof *r + (size_t)k * sizeof r->part[0]);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r + (size_t)k * sizeof r->part[0]);
    r->peer = peer;
    r->is_send = is_send;
    r->nparts = (int)k;
    tether__net_live_add(&ep->live, &r->live, peer);
    return r;
}

void tether__tcp_req_free(tether__tcp_ep *ep, struct tether__req *r)
{
    tether__net_live_remove(&ep->live, &r->live);
    if (r->nparts == 1 && ep->nspare < TETHER__REQ_SPARES)
        ep->spare[ep->nspare++] = r;
    else
        free(r);
}

/* Lock ep and take stock: returns with ep->mu held while it is healthy, else its sticky error
 * (unlocked). */
static int enter(tether__tcp_ep *ep)
{
    pthread_mutex_lock(&ep->mu);
    ep->calls++;
    if (!ep->err)
        tether__tcp_sweep_stale(ep); /* a break shows as ep->err below */
    if (ep->err) {
        int rc = tether__tcp_sticky(ep);
        pthread_mutex_unlock(&ep->mu);
        return rc;
    }
    return TETHER_OK;
}

/* The request of a send or receive of len bytes, with ep->mu held. */
static int req_for(tether__tcp_ep *ep, int peer, int is_send, uint64_t len, struct tether__req **r)
{
    uint64_t k = ep->nlinks[peer] ? (uint64_t)ep->nlinks[peer]
                 : is_send        ? tether__route_chunks(len)
                                  : 1;
    *r = req_new(ep, peer, is_send, k);
    if (!*r)
        return tether__fail(TETHER_ENOMEM, "out of memory posting a message to rank %d", peer);
    return TETHER_OK;
}

/* Common entry of isend/irecv of len bytes: lock, check, allocate. Returns with ep->mu held on
 * success. */
static int begin(tether__tcp_ep *ep, int peer, int is_send, uint64_t len, struct tether__req **r)
{
    TRY(check_peer(ep, peer));
    TRY(enter(ep));
    int rc = req_for(ep, peer, is_send, len, r);
    if (rc < 0)
        pthread_mutex_unlock(&ep->mu);
    return rc;
}

/* A posted request's outcome, with ep->mu held: on failure it is released and the error
 * recorded. */
static int settle(tether__tcp_ep *ep, struct tether__req *r, int rc, tether__req **out)
{
    if (rc < 0) {
        tether__tcp_req_free(ep, r);
        return tether__tcp_sticky(ep);
    }
    *out = r;
    return rc;
}

/* Common exit: settle, unlock. */
static int end(tether__tcp_ep *ep, struct tether__req *r, int rc, tether__req **out)
{
    rc = settle(ep, r, rc, out);
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

/* A message to a peer with no link: its chunks as routed frames (frame.h), in order, on link 0 of
 * the neighbour towards it. */
static int route_send(tether__tcp_ep *ep, struct tether__req *r, const void *buf, size_t len,
                      tether__tag tag)
{
    int peer = r->peer;
    if (!ep->routes.via)
        return tether__fail(TETHER_EINTERNAL, "%s: rank %d has no link to rank %d", ep->backend,
                            ep->rank, peer);
    tether__frame f = {.tag = tag,
                       .len = len,
                       .type = TETHER__FRAME_ROUTED,
                       .code = tether__route_code(ep->rank, peer)};
    uint64_t chunks = tether__route_chunks(len), off = 0;
    r->parts_left = (int)chunks; /* count first: a part may finish while queueing */
    for (uint64_t i = 0; i < chunks; i++) {
        tether__txmsg *t = &r->part[i].tx;
        t->len = tether__route_first(len - off);
        if (i > 0) {
            f.type = TETHER__FRAME_ROUTED_MORE;
            f.len = t->len;
        }
        tether__frame_encode(&f, t->hdr);
        t->payload = (const unsigned char *)buf + off;
        t->req = r;
        off += t->len;
        TRY(tether__tcp_tx_queue(ep, tether__tcp_hop(ep, peer), t));
    }
    return TETHER_OK;
}

/* A receive from a peer with no link waits in its queue-only link, where routed frames from it
 * are matched as if they had come straight from it. */
static int route_recv(tether__tcp_ep *ep, struct tether__req *r, void *buf, size_t len,
                      tether__tag tag)
{
    tether__rxmsg *m = &r->part[0].rx;
    if (!ep->routes.via)
        return tether__fail(TETHER_EINTERNAL, "%s: rank %d has no link to rank %d", ep->backend,
                            ep->rank, r->peer);
    *m = (tether__rxmsg){.tag = tag, .msglen = len, .len = len, .buf = buf, .req = r};
    r->parts_left = 1;
    return tether__tcp_post_recv(ep, &ep->links[r->peer][0], r, m);
}

/* Whether the next frame waiting on l (in rbuf, else still in the socket: a peek) is an abort. */
static int abort_waiting(const tether__link *l)
{
    unsigned char hdr[TETHER__FRAME_SIZE];
    const unsigned char *next = hdr;
    tether__frame f;
    if (l->cur || l->eof || (l->rlen > 0 && l->rlen < TETHER__FRAME_SIZE))
        return 0; /* inside a frame: the abort, if one came, is behind it */
    if (l->rlen >= TETHER__FRAME_SIZE)
        next = l->rbuf;
    else if (l->shm_rx
                 ? !tether__shm_peek(l->shm, hdr, sizeof hdr)
                 : recv(l->fd, hdr, sizeof hdr, MSG_PEEK | MSG_DONTWAIT) != (ssize_t)sizeof hdr)
        return 0;
    return tether__frame_decode(next, &f) == 0 && f.type == TETHER__FRAME_ABORT;
}

/* A rank that only sends reads nothing, so the abort of a receiver that found its earlier eager
 * message mismatched would wait unread while every later send returned TETHER_OK. A point-to-point
 * send first looks at what the peer sent: an abort there is read (the endpoint breaks with its
 * code) and the send fails. One peek that finds nothing, most of the time; other frames stay
 * where tether__tcp_read wants them. */
static int read_peer_abort(tether__tcp_ep *ep, int peer)
{
    for (int k = 0; k < ep->nlinks[peer] && !ep->err; k++)
        if (abort_waiting(&ep->links[peer][k]))
            TRY(tether__tcp_read(ep, &ep->links[peer][k], 1));
    return ep->err ? tether__tcp_sticky(ep) : TETHER_OK;
}

/* isend's work once r is made, with ep->mu held. */
static int send_on(tether__tcp_ep *ep, struct tether__req *r, const void *buf, size_t len,
                   tether__tag tag)
{
    int peer = r->peer, rc = TETHER_OK;
    tether__rxcache_note(&ep->rxcache, len);
    if (ep->nlinks[peer] == 0)
        return route_send(ep, r, buf, len, tag);
    if (ep->links[peer][0].bye)
        return tether__tcp_gone(ep, &ep->links[peer][0], "sends to it");
    if ((tag.seq & TETHER__TAG_P2P) && (rc = read_peer_abort(ep, peer)) < 0)
        return rc;
    tether__frame f = {.tag = tag, .len = len, .type = TETHER__FRAME_DATA};
    int cma = tether__cma_use(&ep->links[peer][0].cma,
                              tether__tcp_read_min(ep, ep->links[peer][0].shm_tx, tag), len);
    for (int k = 0; k < ep->nlinks[peer] && rc == TETHER_OK; k++) {
        tether__link *l = &ep->links[peer][k];
        tether__txmsg *t = &r->part[k].tx;
        uint64_t off, n;
        if (!tether__stripe(len, l->nlinks, k, &off, &n))
            continue;
        t->req = r;
        r->parts_left++;
        if (cma) {
            tether__cma_describe(&l->cma, &t->cma, r, &f, (const unsigned char *)buf + off, t->hdr);
            t->payload = t->cma.desc;
            t->len = TETHER__CMA_DESC_SIZE;
            r->parts_left++; /* the reader's CMA_DONE */
        } else {
            tether__frame_encode(&f, t->hdr);
            t->payload = (const unsigned char *)buf + off;
            t->len = n;
        }
        rc = tether__tcp_tx_queue(ep, l, t);
    }
    return rc;
}

/* irecv's work once r is made, with ep->mu held. */
static int recv_on(tether__tcp_ep *ep, struct tether__req *r, void *buf, size_t len,
                   tether__tag tag)
{
    int peer = r->peer, rc = TETHER_OK;
    ep->recvs++;
    tether__rxcache_note(&ep->rxcache, len);
    if (ep->nlinks[peer] == 0)
        return route_recv(ep, r, buf, len, tag);
    for (int k = 0; k < ep->nlinks[peer]; k++) { /* count first: a part may finish while posting */
        uint64_t off, n;
        r->parts_left += tether__stripe(len, ep->nlinks[peer], k, &off, &n);
    }
    for (int k = 0; k < ep->nlinks[peer] && rc == TETHER_OK; k++) {
        tether__rxmsg *m = &r->part[k].rx;
        uint64_t off, n;
        if (!tether__stripe(len, ep->nlinks[peer], k, &off, &n))
            continue;
        *m = (tether__rxmsg){
            .tag = tag, .msglen = len, .len = n, .buf = (unsigned char *)buf + off, .req = r};
        rc = tether__tcp_post_recv(ep, &ep->links[peer][k], r, m);
    }
    return rc;
}

int tether__tcp_isend(tether__ep *tep, int peer, const void *buf, size_t len, tether__tag tag,
                      tether__req **out)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
    struct tether__req *r;
    TRY(begin(ep, peer, 1, len, &r));
    return end(ep, r, send_on(ep, r, buf, len, tag), out);
}

int tether__tcp_irecv(tether__ep *tep, int peer, void *buf, size_t len, tether__tag tag,
                      tether__req **out)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
    struct tether__req *r;
    TRY(begin(ep, peer, 0, len, &r));
    return end(ep, r, recv_on(ep, r, buf, len, tag), out);
}

/* Every message of the batch in one turn of ep->mu; a request that finished while it was posted
 * (a small send into a pair's ring, a receive whose message had come) is released at once, so
 * the caller tests only those still pending: each test is a turn of the lock. */
int tether__tcp_post(tether__ep *tep, const tether__post *posts, int n, tether__req **reqs)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
    for (int i = 0; i < n; i++) {
        reqs[i] = NULL;
        TRY(check_peer(ep, posts[i].peer));
    }
    TRY(enter(ep));
    int rc = TETHER_OK;
    for (int i = 0; i < n && rc == TETHER_OK; i++) {
        const tether__post *p = &posts[i];
        struct tether__req *r;
        if (p->is_send ? tether__tcp_fast_send(ep, p->peer, p->buf, p->len, p->tag)
                       : tether__tcp_fast_recv(ep, p->peer, p->buf, p->len, p->tag, NULL)) {
            ep->recvs += !p->is_send;
            continue;
        }
        if ((rc = req_for(ep, p->peer, p->is_send, p->len, &r)) < 0)
            break;
        rc = settle(ep, r,
                    p->is_send ? send_on(ep, r, p->buf, p->len, p->tag)
                               : recv_on(ep, r, p->buf, p->len, p->tag),
                    &reqs[i]);
        if (rc == TETHER_OK && r->parts_left == 0) {
            tether__tcp_req_free(ep, r);
            reqs[i] = NULL;
        }
    }
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

/* Move what can move on every link to peer (or to the neighbour a routed message to it takes),
 * without blocking. */
static int progress_peer(tether__tcp_ep *ep, int peer, int read)
{
    tether__link *first = tether__tcp_hop(ep, peer);
    for (int k = 0; k < first->nlinks && !ep->err; k++) {
        tether__link *l = first + k;
        if (l->txhead)
            TRY(tether__tcp_flush(ep, l));
        /* a send left in memory finishes when the reader says so, a kept one with its ack */
        if (read || tether__cma_sending(&l->cma) || l->awaiting || l->carrier)
            TRY(tether__tcp_read(ep, l, 0));
    }
    return ep->err;
}

/* Receive r's message straight from its peer's ring, where it is next there (engine_fast.h): 1
 * when r finished so. */
static int fast_recv_of(tether__tcp_ep *ep, struct tether__req *r)
{
    tether__rxmsg *m = &r->part[0].rx;
    if (r->is_send || r->nparts != 1 || ep->nlinks[r->peer] != 1 ||
        !tether__tcp_fast_recv(ep, r->peer, m->buf, m->msglen, m->tag, m))
        return 0;
    tether__rxq_remove(&ep->links[r->peer][0].posted, m);
    tether__tcp_part_done(ep, r);
    return 1;
}

/* A receive whose only link is a ring, tested again while its peer has written nothing there
 * since its last full test and its thread has not slept: up to QUIET_POLLS such tests in a row
 * only read the ring's write index, with no lock, so a waiter's spin sees its message come within
 * a cache line's trip rather than a full test's (a lock, the ring, the socket: ~700 instructions,
 * on a small exchange's critical path). Every (QUIET_POLLS + 1)th test is a full one, so a
 * socket's end, a heartbeat, an abort and another thread's progress are seen as before, a few
 * microseconds later at most. Only while spinning: the first test after a sleep is full. Quick
 * tests across sleeps held ranks in a barrier for 15 sleep slices (~100 ms) in one start in ten
 * (measured: docs/perf/notes.md, backends/tcp/engine.c). */
#define QUIET_POLLS 15

static int quiet(tether__tcp_ep *ep, struct tether__req *r)
{
    if (!r->quiet_ring || r->quiet_polls >= QUIET_POLLS ||
        atomic_load_explicit(&ep->sleeps, memory_order_relaxed) != r->quiet_sleeps ||
        tether__shm_written(r->quiet_ring) != r->quiet_head)
        return 0;
    r->quiet_polls++;
    return 1;
}

/* After a full test left receive r pending: where its quick tests look (ep->mu held). */
static void note_quiet(tether__tcp_ep *ep, struct tether__req *r)
{
    const tether__link *l = &ep->links[r->peer][0];
    r->quiet_ring = NULL;
    r->quiet_polls = 0;
    if (r->is_send || r->nparts != 1 || ep->nlinks[r->peer] != 1 || !l->shm_rx)
        return;
    r->quiet_ring = l->shm; /* mapped until the endpoint closes */
    r->quiet_head = tether__shm_written(l->shm);
    r->quiet_sleeps = atomic_load_explicit(&ep->sleeps, memory_order_relaxed);
}

int tether__tcp_test(tether__ep *tep, tether__req *r, int *done)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
    if (quiet(ep, r)) {
        *done = 0;
        return TETHER_OK;
    }
    pthread_mutex_lock(&ep->mu);
    ep->calls++;
    if (r->parts_left > 0 && !ep->err && !fast_recv_of(ep, r))
        progress_peer(ep, r->peer, !r->is_send);
    int rc = TETHER_OK;
    *done = r->parts_left == 0;
    if (*done || ep->err) { /* a request that finished before the break still reports done */
        rc = *done ? TETHER_OK : tether__tcp_sticky(ep);
        tether__tcp_req_free(ep, r);
    } else {
        note_quiet(ep, r);
    }
    if (ep->loop) {
        tether__loop_signal(ep->loop); /* we may have finished another thread's request */
        tether__loop_seen(ep->loop);
    }
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

/* The parts irecv posted for receive r (those its stripes give a share, or the one on a routed
 * peer's queue-only link): with take = 0, 1 if every one still waits in its link's posted queue
 * (none has met its frame), else 0; with take = 1, take them all out. */
static int posted_parts(tether__tcp_ep *ep, struct tether__req *r, int take)
{
    int n = ep->nlinks[r->peer] ? ep->nlinks[r->peer] : 1;
    uint64_t len = r->part[0].rx.msglen, off, share;
    for (int k = 0; k < n; k++) {
        if (ep->nlinks[r->peer] && !tether__stripe(len, n, k, &off, &share))
            continue;
        tether__rxq *q = &ep->links[r->peer][k].posted;
        if (take)
            tether__rxq_remove(q, &r->part[k].rx);
        else if (!tether__rxq_holds_msg(q, &r->part[k].rx))
            return 0;
    }
    return 1;
}

int tether__tcp_cancel(tether__ep *tep, tether__req *r)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
    pthread_mutex_lock(&ep->mu);
    ep->calls++;
    int rc = 0;
    if (ep->err) {
        rc = tether__tcp_sticky(ep);
        tether__tcp_req_free(ep, r);
    } else if (!r->is_send && r->parts_left > 0 && posted_parts(ep, r, 0)) {
        posted_parts(ep, r, 1);
        tether__tcp_req_free(ep, r);
        rc = 1;
    }
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

int tether__tcp_link_bytes(tether__tcp_ep *ep, int peer, int link, uint64_t *sent, uint64_t *recvd)
{
    if (peer < 0 || peer >= ep->size || link < 0 || link >= ep->nlinks[peer])
        return tether__fail(TETHER_EINVAL, "no link %d to rank %d", link, peer);
    pthread_mutex_lock(&ep->mu);
    *sent = ep->links[peer][link].bytes_sent;
    *recvd = ep->links[peer][link].bytes_recvd;
    pthread_mutex_unlock(&ep->mu);
    return TETHER_OK;
}

/* Payload bytes moved: read, waiting in the socket for the frame being read, or sent and
 * acknowledged by the peer (a large message on a slow link keeps moving long after it was written
 * into the socket: netns.slow). Never a frame's header: a heartbeat proves its peer alive, never
 * that a call progressed, and with it counted TETHER_TIMEOUT never fired while the peers lived.
 * What the socket has not yet sent holds any heartbeat written after the data too, and its
 * acknowledgement would show as data leaving: so the count never goes back, and a heartbeat's
 * bytes can at most make up for the dip they caused, never add to the most data has moved. */
uint64_t tether__tcp_moved(tether__ep *tep)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
    uint64_t total = 0;
    pthread_mutex_lock(&ep->mu);
    for (int i = 0; i < ep->nflat; i++) {
        const tether__link *l = ep->flat[i];
        size_t in, out;
        tether__tcp_queued(l, &in, &out);
        uint64_t rest = l->cur && l->rx != TETHER__RX_BEAT ? tether__tcp_payload_left(l)
                                                           : 0; /* in the socket: no header */
        total += in < rest ? in : rest;
        total += l->payload_recvd + (l->payload_sent > out ? l->payload_sent - out : 0);
    }
    if (total > ep->moved)
        ep->moved = total;
    total = ep->moved;
    pthread_mutex_unlock(&ep->mu);
    return total;
}

/* Every peer has links of its own: no message is ever routed. */
static int every_peer_linked(const tether__tcp_ep *ep)
{
    for (int p = 0; p < ep->size; p++)
        if (p != ep->rank && ep->nlinks[p] == 0)
            return 0;
    return 1;
}

static int reads_memory(const tether__tcp_ep *ep)
{
    /* only facts the peers share: with TETHER_TCP_CMA_MIN=0 this rank answered no to every offer,
     * but its value otherwise is its own, so it does not count */
    if (!ep->cma_min)
        return 0;
    for (int p = 0; p < ep->size; p++)
        if (p != ep->rank && !(ep->nlinks[p] > 0 && tether__cma_both_ways(&ep->links[p][0].cma)))
            return 0;
    return 1;
}

size_t tether__tcp_packet(const tether__ep *tep)
{
    return ((const tether__tcp_ep *)tep)->packet;
}

unsigned tether__tcp_caps(const tether__ep *tep)
{
    const tether__tcp_ep *ep = (const tether__tcp_ep *)tep;
    return (every_peer_linked(ep) ? TETHER__CAP_DIRECT : 0) |
           (ep->one_host ? TETHER__CAP_ONE_HOST : 0) |
           (ep->rings_all ? TETHER__CAP_MEMORY_RINGS : 0) |
           (reads_memory(ep) ? TETHER__CAP_READS_MEMORY : 0);
}
