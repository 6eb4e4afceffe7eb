/* core/p2p.c - point to point: tagged, non-blocking requests, and the blocking send/recv on top.
 *
 * A message is tagged with the group, a per-(peer, tag) message number (seq, with TETHER__TAG_P2P
 * set, so it never collides with a collective), the user's tag as the step, and a signature of
 * count and dtype. Numbering per tag is what lets messages of different tags between one pair be
 * received in any order, while those of one tag match in the order sent.
 *
 * A receive from TETHER_ANY_SOURCE cannot be numbered when posted: it becomes an ordinary directed
 * receive once a message is there to claim. Until then each test asks the transport (probe) whether
 * the next unclaimed message of its tag has arrived from each peer in turn, starting after the peer
 * served last (round robin), and posts the directed receive for the first it finds; the per-(peer,
 * tag) numbers make the claim exact, so a sender's order is kept and two any-source receives never
 * claim one message. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "argcheck.h"
#include "clock.h"
#include "coll.h"
#include "wait.h"

struct tether_request {
    tether_group *g;
    tether__req *r; /* the backend's; NULL while an any-source receive has claimed no message */
    uint32_t seq, sig;
    const char *name; /* "send", "recv" or "recv from any source", for messages */
    int peer;         /* group rank, or TETHER_ANY_SOURCE until a message is claimed */
    int tag, sending;
    void *buf;
    size_t bytes;
    int *source; /* where the sender's rank goes when a receive completes, or NULL */
};

/* This group's message counter for (peer, tag) and direction, added at 0 when new. */
static uint32_t *p2p_counter(tether_group *g, int peer, int tag, int sending)
{
    for (size_t i = 0; i < g->np2p; i++)
        if (g->p2p[i].peer == peer && g->p2p[i].tag == tag)
            return sending ? &g->p2p[i].sent : &g->p2p[i].recvd;
    if (g->np2p == g->p2p_cap) {
        size_t cap = g->p2p_cap ? 2 * g->p2p_cap : 8;
        tether__p2p_count *grown = realloc(g->p2p, cap * sizeof *grown);
        if (!grown)
            return NULL;
        g->p2p = grown;
        g->p2p_cap = cap;
    }
    g->p2p[g->np2p] = (tether__p2p_count){.peer = peer, .tag = tag};
    tether__p2p_count *c = &g->p2p[g->np2p++];
    return sending ? &c->sent : &c->recvd;
}

/* The tag seq of message number n of a (peer, tag). */
static uint32_t p2p_seq(uint32_t n)
{
    return TETHER__TAG_P2P | (n & ~(TETHER__TAG_P2P | TETHER__TAG_CTRL));
}

/* The checks every point-to-point call makes before anything moves. */
static int check(const char *call, tether_group *g, const void *buf, size_t count, tether_dtype dt,
                 int peer, int tag, int sending)
{
    tether__clear_error();
    TRY(tether__check_group(call, g));
    TRY(tether__check_dtype(call, dt));
    TRY(tether__check_buf(call, "buf", buf, count));
    if (!sending && peer == TETHER_ANY_SOURCE && g->size == 1)
        return tether__fail(TETHER_EINVAL,
                            "%s: src is TETHER_ANY_SOURCE in a group of size 1: there is no other "
                            "rank to receive from",
                            call);
    if (sending || peer != TETHER_ANY_SOURCE)
        TRY(tether__check_rank(call, sending ? "dst" : "src", peer, g->size, g->rank, 0));
    TRY(tether__check_size(call, count, 1, tether_dtype_size(dt)));
    if (tag < 0)
        return tether__fail(TETHER_EINVAL, "%s: tag %d is negative; tags are 0 or more", call, tag);
    return tether__group_check(g);
}

/* A backend that runs whole calls (MPI) does point to point itself. */
static int runs_calls(const tether_group *g)
{
    return g->world->ops && g->world->ops->run;
}

/* Number req's message to peer and post it to the backend. Errors are the backend's, unbroken. */
static int start(tether_request *req, int peer)
{
    tether_group *g = req->g;
    uint32_t *counter = p2p_counter(g, peer, req->tag, req->sending);
    if (!counter)
        return tether__fail(TETHER_ENOMEM, "%s: out of memory for a message counter", req->name);
    req->peer = peer;
    req->seq = p2p_seq((*counter)++);
    g->cur_seq = req->seq;
    g->cur_sig = req->sig;
    g->cur_name = req->name;
    g->cur_peer = tether__world_rank(g, peer);
    g->cur_tag = req->tag;
    return req->sending ? tether__isend(g, peer, req->buf, req->bytes, (uint32_t)req->tag, &req->r)
                        : tether__irecv(g, peer, req->buf, req->bytes, (uint32_t)req->tag, &req->r);
}

/* Every peer the transport says closed normally with nothing left to claim: EPEER naming them
 * (the receive would wait for ever). */
static int nobody_left(tether_request *req)
{
    tether_group *g = req->g;
    char ranks[256] = "";
    size_t used = 0;
    for (int p = 0; p < g->size && used < sizeof ranks; p++)
        if (p != g->rank)
            used += (size_t)snprintf(ranks + used, sizeof ranks - used, "%s%s", used ? ", " : "",
                                     TETHER__RANK_TEXT(g, p));
    return tether__fail(TETHER_EPEER,
                        "%s in %s (tag %d): every rank that could send it closed normally (freed "
                        "its group or exited) with no such message left: %s",
                        TETHER__RANK_TEXT(g, g->rank), req->name, req->tag, ranks);
}

/* An any-source receive without a message: claim the first that has arrived, looking at each
 * peer's next message of the tag, in turn from the one after the peer served last. Returns 1 when
 * it posted the receive for one, 0 when none is there yet, or the error (unbroken). */
static int claim(tether_request *req)
{
    tether_group *g = req->g;
    tether__world *w = g->world;
    int gone = 0;
    for (int i = 1; i <= g->size; i++) {
        int peer = (g->any_last + i) % g->size;
        if (peer == g->rank)
            continue;
        uint32_t *counter = p2p_counter(g, peer, req->tag, 0);
        if (!counter)
            return tether__fail(TETHER_ENOMEM, "%s: out of memory for a message counter",
                                req->name);
        tether__tag t = {
            .group = g->id, .seq = p2p_seq(*counter), .step = (uint32_t)req->tag, .sig = req->sig};
        int rc = w->ops->probe(w->ep, tether__world_rank(g, peer), t);
        if (rc < 0)
            return rc;
        if (rc == TETHER__PROBE_GONE) {
            gone++;
        } else if (rc) {
            g->any_last = peer;
            TRY(start(req, peer));
            return 1;
        }
    }
    return gone == g->size - 1 ? nobody_left(req) : 0;
}

static int checked_post(const char *call, tether_group *g, void *buf, size_t count, tether_dtype dt,
                        int peer, int tag, int sending, int *source, tether_request **out)
{
    if (out)
        *out = NULL;
    TRY(check(call, g, buf, count, dt, peer, tag, sending));
    if (!out)
        return tether__fail(TETHER_EINVAL, "%s: req is NULL; pass where to store the request",
                            call);
    if (runs_calls(g))
        return tether__fail(TETHER_EUNAVAIL,
                            "%s: the %s backend offers blocking tether_send and "
                            "tether_recv only",
                            call, g->world->ops->name);
    if (peer == TETHER_ANY_SOURCE && !g->world->ops->probe)
        return tether__fail(TETHER_EUNAVAIL, "%s: the %s backend offers no TETHER_ANY_SOURCE", call,
                            g->world->ops->name);
    tether_request *req = calloc(1, sizeof *req);
    if (!req)
        return tether__fail(TETHER_ENOMEM, "%s: out of memory for a request", call);
    tether__coll c = {.kind = TETHER__COLL_SEND_RECV, .count = count, .dt = dt};
    *req = (tether_request){.g = g,
                            .sig = tether__signature(&c),
                            .name = sending                     ? "send"
                                    : peer == TETHER_ANY_SOURCE ? "recv from any source"
                                                                : "recv",
                            .peer = peer,
                            .tag = tag,
                            .sending = sending,
                            .buf = buf,
                            .bytes = count * tether_dtype_size(dt),
                            .source = source};
    if (peer != TETHER_ANY_SOURCE) {
        int rc = start(req, peer);
        if (rc < 0) {
            free(req);
            return tether__group_break(g, rc);
        }
    }
    *out = req;
    return TETHER_OK;
}

static int post(const char *call, tether_group *g, void *buf, size_t count, tether_dtype dt,
                int peer, int tag, int sending, int *source, tether_request **out)
{
    return tether__call_end(g, call,
                            checked_post(call, g, buf, count, dt, peer, tag, sending, source, out));
}

int tether_isend(tether_group *g, const void *buf, size_t count, tether_dtype dt, int dst, int tag,
                 tether_request **req)
{
    return post("tether_isend", g, (void *)buf, count, dt, dst, tag, 1, NULL, req);
}

int tether_irecv(tether_group *g, void *buf, size_t count, tether_dtype dt, int src, int tag,
                 tether_request **req)
{
    return post("tether_irecv", g, buf, count, dt, src, tag, 0, NULL, req);
}

int tether_irecv_from(tether_group *g, void *buf, size_t count, tether_dtype dt, int src, int tag,
                      int *source, tether_request **req)
{
    return post("tether_irecv_from", g, buf, count, dt, src, tag, 0, source, req);
}

/* One round for req (a tether__tester): claim a message if it has none, then test it. Returns 1
 * while it is pending, 0 once done (req->r released), or the error (req->r released). */
static int step(void *arg, int *progress)
{
    tether_request *req = arg;
    tether__world *w = req->g->world;
    if (!req->r) {
        int rc = claim(req);
        if (rc <= 0)
            return rc < 0 ? rc : 1;
        *progress = 1;
    }
    int done = 0, rc = w->ops->test(w->ep, req->r, &done);
    if (rc < 0 || done) {
        req->r = NULL;
        *progress = 1;
    }
    return rc < 0 ? rc : !done;
}

/* req ended with rc: report its sender, free it, break its group on an error. */
static int finish(tether_request *req, int rc)
{
    tether_group *g = req->g;
    if (rc == TETHER_OK && req->source)
        *req->source = req->peer;
    free(req);
    return rc < 0 ? tether__group_break(g, rc) : TETHER_OK;
}

/* Test req once; frees it when it is done or failed. */
static int test_one(tether_request *req, int *done)
{
    int progress = 0, rc = step(req, &progress);
    *done = rc <= 0;
    return *done ? finish(req, rc) : TETHER_OK;
}

int tether_test(tether_request *req, int *done)
{
    tether__clear_error();
    if (!req || !done)
        return tether__fail(TETHER_EINVAL, "tether_test: %s is NULL", req ? "done" : "req");
    TRY(tether__check_group("tether_test", req->g)); /* a forked child leaves it alone */
    return test_one(req, done);
}

/* req's call becomes its group's current one: for the timeout's message and the heartbeats. */
static void make_current(tether_request *req)
{
    tether_group *g = req->g;
    g->cur_seq = req->seq;
    g->cur_sig = req->sig;
    g->cur_name = req->name;
    g->cur_peer = req->r ? tether__world_rank(g, req->peer) : TETHER__WS_ANY;
    g->cur_tag = req->tag;
}

int tether_wait(tether_request *req)
{
    tether__clear_error();
    if (!req)
        return tether__fail(TETHER_EINVAL, "tether_wait: req is NULL");
    tether_group *g = req->g;
    TRY(tether__check_group("tether_wait", g)); /* a forked child leaves it alone */
    make_current(req);
    return tether__call_end(g, "tether_wait", finish(req, tether__wait_until(g, step, req)));
}

/* A receive may be withdrawn only while it is the last posted of its (peer, tag): its message
 * number then goes back to the next receive posted, so messages still match in the order sent.
 * A later one already holds the next number, and would take this one's message out of order. */
static int withdraw(tether_request *req)
{
    tether_group *g = req->g;
    tether__world *w = g->world;
    uint32_t *counter = p2p_counter(g, req->peer, req->tag, 0);
    if (!counter)
        return tether__fail(TETHER_ENOMEM, "tether_cancel: out of memory for a message counter");
    if (!w->ops->cancel || p2p_seq(*counter - 1) != req->seq)
        return 0;
    int rc = w->ops->cancel(w->ep, req->r);
    if (rc < 0) {
        req->r = NULL; /* released by the backend */
        return finish(req, rc);
    }
    if (rc)
        (*counter)--;
    return rc;
}

int tether_cancel(tether_request *req, int *cancelled)
{
    tether__clear_error();
    if (cancelled)
        *cancelled = 0;
    if (!req || !cancelled)
        return tether__fail(TETHER_EINVAL, "tether_cancel: %s is NULL", req ? "cancelled" : "req");
    TRY(tether__check_group("tether_cancel", req->g)); /* a forked child leaves it alone */
    int rc = req->sending ? 0 : !req->r ? 1 : withdraw(req);
    if (rc < 0)
        return rc;
    if (rc) {
        free(req);
        *cancelled = 1;
    }
    return TETHER_OK;
}

/* One round of tether_waitsome: test each request once. Returns how many are still pending (the
 * first of them: *first) or the first error met; *done_now says how many finished. */
static int test_round(tether_request **reqs, int n, int *done_now, int *first)
{
    int pending = 0;
    *done_now = 0;
    for (int i = 0; i < n; i++) {
        if (!reqs[i])
            continue;
        int done;
        int rc = test_one(reqs[i], &done);
        if (done)
            reqs[i] = NULL;
        if (rc < 0)
            return rc;
        if (done)
            (*done_now)++;
        else if (pending++ == 0)
            *first = i;
    }
    return pending;
}

int tether_waitsome(tether_request **reqs, int n, int timeout_ms, int *completed)
{
    tether__clear_error();
    if (completed)
        *completed = 0;
    if (n < 0 || (n && !reqs))
        return tether__fail(TETHER_EINVAL, "tether_waitsome: %d requests at %p", n, (void *)reqs);
    for (int i = 0; i < n; i++) /* a forked child leaves them alone */
        if (reqs[i])
            TRY(tether__check_group("tether_waitsome", reqs[i]->g));
    const int64_t deadline = tether__now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    int rc, done_now, first = 0, began = 0, peer = 0;
    tether_request *waiting = NULL; /* whose call the heartbeats say this rank waits in */
    tether__world *w = NULL;        /* waiting's, kept for the end: waiting may be freed by then */
    for (;;) {
        rc = test_round(reqs, n, &done_now, &first);
        if (completed)
            *completed = done_now;
        int64_t left = deadline - tether__now_ms();
        if (rc <= 0 || done_now || left <= 0)
            break;
        if (!waiting) {
            waiting = reqs[first];
            make_current(waiting);
            w = waiting->g->world;
            peer = waiting->g->cur_peer;
        }
        /* Sleep until some I/O may be possible: at most 10 ms, so requests that another thread's
         * wait completes on the shared endpoint are noticed soon. Nothing has finished since the
         * first sleep, so waiting is still pending: a verdict that this rank can never go on
         * fails it (and breaks its group), as it fails a tether_wait. */
        rc = tether__wait_slice(waiting->g, (int)(left < 10 ? left : 10), &began);
        if (rc < 0) {
            for (int i = 0; i < n; i++)
                if (reqs[i] == waiting)
                    reqs[i] = NULL;
            rc = finish(waiting, rc);
            break;
        }
    }
    if (began) /* the caller may call again at once: a slice that ran out is not progress */
        tether__ws_wait_end(w->ws, peer, done_now > 0);
    return rc < 0 ? rc : TETHER_OK;
}

/* tether_send and tether_recv: tag 0, posted and waited for. */
static int blocking(const char *call, tether_group *g, void *buf, size_t count, tether_dtype dt,
                    int peer, int sending, int *source)
{
    if (g && runs_calls(g)) {
        TRY(check(call, g, buf, count, dt, peer, 0, sending));
        tether__coll c = {.kind = TETHER__COLL_SEND_RECV,
                          .count = count,
                          .dt = dt,
                          .esize = tether_dtype_size(dt),
                          .send = buf,
                          .recv = buf,
                          .root =
                              peer, /* not in the transports' signature: the ends name each other */
                          .sending = sending,
                          .source = source};
        return tether__call_end(g, call, tether__run_in_backend(g, &c, sending ? "send" : "recv"));
    }
    tether_request *req;
    TRY(post(call, g, buf, count, dt, peer, 0, sending, source, &req));
    return tether_wait(req);
}

int tether_send(tether_group *g, const void *buf, size_t count, tether_dtype dt, int dst)
{
    return blocking("tether_send", g, (void *)buf, count, dt, dst, 1, NULL);
}

int tether_recv(tether_group *g, void *buf, size_t count, tether_dtype dt, int src)
{
    return blocking("tether_recv", g, buf, count, dt, src, 0, NULL);
}

int tether_recv_from(tether_group *g, void *buf, size_t count, tether_dtype dt, int src,
                     int *source)
{
    return blocking("tether_recv_from", g, buf, count, dt, src, 0, source);
}
