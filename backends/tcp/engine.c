/* backends/tcp/engine.c - the endpoint: requests, sending, test, wait, abort, close. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cma.h"
#include "engine_impl.h"
#include "backends/net/socket.h"

#define MAX_IO_DEFAULT                                                                             \
    (1L << 30)            /* below every platform's per-call limit (Linux: 2 GiB - 4 KiB)          \
                           */
#define IOV_BATCH 64      /* frames gathered into one sendmsg */
#define CTRL_FLUSH_MS 500 /* how long abort() and close() try to get their frame out */
#define ABORT_TAIL_MAX                                                                             \
    (4u << 20) /* a half-sent frame longer than this is not finished for abort                     \
                */
#define POLL_STACK 64

/* ---- errors ---- */

/* Forget a chain of queued frames: request parts belong to their requests, abort frames to us. */
static void tx_forget(tether__txmsg *t)
{
    while (t) {
        tether__txmsg *next = t->next;
        if (!t->req)
            free(t);
        t = next;
    }
}

static void tx_clear(tether__link *l)
{
    tx_forget(l->txhead);
    l->txhead = l->txtail = NULL;
}

int tether__tcp_break(tether__tcp_ep *ep, int code, const char *fmt, ...)
{
    if (ep->err)
        return ep->err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ep->errmsg, sizeof ep->errmsg, fmt, ap);
    va_end(ap);
    ep->err = code;
    ep->events++;
    tether__cma_withdraw(ep);
    TLOG_INFO("%s endpoint broken: %s: %s", ep->backend, tether_err_name(code), ep->errmsg);
    for (int i = 0; i < ep->nflat + ep->nvirt; i++) {
        tx_clear(ep->flat[i]);
        tether__tcp_rx_clear(ep, ep->flat[i]);
    }
    return code;
}

int tether__tcp_gone(tether__tcp_ep *ep, const tether__link *l, const char *what)
{
    return tether__tcp_break(ep, TETHER_EPEER,
                             "rank %d (%s) closed its connections (its program freed "
                             "the group or is exiting) while rank %d still %s",
                             l->peer, ep->addr[l->peer], ep->rank, what);
}

/* The sticky error, recorded for the calling thread's public call. */
static int sticky(const tether__tcp_ep *ep)
{
    return tether__fail(ep->err, "%s", ep->errmsg);
}

/* ---- send side ---- */

static void tx_push(tether__link *l, tether__txmsg *t)
{
    t->next = NULL;
    if (l->txtail)
        l->txtail->next = t;
    else
        l->txhead = t;
    l->txtail = t;
}

/* Gather queued frames into iov, at most max_io bytes. Returns the count; *total the bytes. */
static int gather(const tether__tcp_ep *ep, const tether__link *l, struct iovec *iov,
                  uint64_t *total)
{
    int n = 0;
    *total = 0;
    for (tether__txmsg *t = l->txhead; t && n < IOV_BATCH - 1 && *total < ep->max_io; t = t->next) {
        if (t->sent < TETHER__FRAME_SIZE) {
            iov[n++] = (struct iovec){t->hdr + t->sent, TETHER__FRAME_SIZE - (size_t)t->sent};
            *total += TETHER__FRAME_SIZE - t->sent;
        }
        uint64_t done = t->sent > TETHER__FRAME_SIZE ? t->sent - TETHER__FRAME_SIZE : 0;
        uint64_t left = t->len - done, room = ep->max_io > *total ? ep->max_io - *total : 0;
        if (left > room)
            left = room;
        if (left > 0) {
            iov[n++] = (struct iovec){(void *)(t->payload + done), (size_t)left};
            *total += left;
        }
    }
    return n;
}

/* Account n written bytes to the queue head, finishing frames. */
static void tx_advance(tether__tcp_ep *ep, tether__link *l, uint64_t n)
{
    while (n > 0 && l->txhead) {
        tether__txmsg *t = l->txhead;
        uint64_t left = TETHER__FRAME_SIZE + t->len - t->sent;
        uint64_t k = n < left ? n : left;
        t->sent += k;
        n -= k;
        if (t->sent < TETHER__FRAME_SIZE + t->len)
            break;
        l->txhead = t->next;
        if (!l->txhead)
            l->txtail = NULL;
        if (t->req) {
            t->req->parts_left--;
            ep->events++;
        } else {
            free(t);
        }
    }
}

/* Write what the socket takes. 0 when the queue is empty or the socket is full, else the errno. */
static int tx_flush(tether__tcp_ep *ep, tether__link *l)
{
    struct iovec iov[IOV_BATCH];
    while (l->txhead) {
        uint64_t total;
        struct msghdr mh = {.msg_iov = iov};
        mh.msg_iovlen = (size_t)gather(ep, l, iov, &total);
        ssize_t n = sendmsg(l->fd, &mh, TETHER__SEND_FLAGS);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : errno;
        }
        l->bytes_sent += (uint64_t)n;
        tx_advance(ep, l, (uint64_t)n);
        if ((uint64_t)n < total)
            return 0;
    }
    return 0;
}

/* Forget l's heartbeat frames: its connection failed, and only the program's own frames may
 * report that (a heartbeat left queued would make the next wait that flushes l fail, though the
 * peer may have closed normally). */
static void tx_drop_beats(tether__link *l)
{
    tether__txmsg **pp = &l->txhead, *last = NULL;
    while (*pp) {
        tether__txmsg *t = *pp;
        tether__frame f;
        if (!t->req && tether__frame_decode(t->hdr, &f) == 0 && f.type == TETHER__FRAME_HEARTBEAT) {
            *pp = t->next;
            free(t);
            continue;
        }
        last = t;
        pp = &t->next;
    }
    l->txtail = last;
}

int tether__tcp_flush(tether__tcp_ep *ep, tether__link *l)
{
    int e = tx_flush(ep, l);
    if (!e)
        return TETHER_OK;
    tx_drop_beats(l);
    if (!l->txhead) /* only heartbeats were lost: a later call on this peer tells what became of it
                     */
        return TETHER_OK;
    return tether__tcp_break(
        ep, e == EPIPE || e == ECONNRESET ? TETHER_EPEER : TETHER_ENET,
        "send to rank %d (%s) failed: %s%s", l->peer, ep->addr[l->peer], strerror(e),
        e == EPIPE || e == ECONNRESET ? "; it probably exited, see its output" : "");
}

/* ---- requests ---- */

static int check_peer(const tether__tcp_ep *ep, int peer)
{
    if (peer < 0 || peer >= ep->size || peer == ep->rank)
        return tether__fail(TETHER_EINTERNAL, "%s: message to rank %d from rank %d of %d",
                            ep->backend, peer, ep->rank, ep->size);
    return TETHER_OK;
}

static struct tether_req *req_new(tether__tcp_ep *ep, int peer, int is_send)
{
    int k = ep->nlinks[peer] ? ep->nlinks[peer] : 1; /* a routed message is one part */
    struct tether_req *r = malloc(sizeof *r + (size_t)k * sizeof r->part[0]);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r + (size_t)k * sizeof r->part[0]);
    r->peer = peer;
    r->is_send = is_send;
    r->next = ep->live;
    if (ep->live)
        ep->live->prev = r;
    ep->live = r;
    return r;
}

static void req_free(tether__tcp_ep *ep, struct tether_req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        ep->live = r->next;
    if (r->next)
        r->next->prev = r->prev;
    free(r);
}

/* Common entry of isend/irecv: lock, check, allocate. Returns with ep->mu held on success. */
static int begin(tether__tcp_ep *ep, int peer, int is_send, struct tether_req **r)
{
    TRY(check_peer(ep, peer));
    pthread_mutex_lock(&ep->mu);
    if (ep->err) {
        int rc = sticky(ep);
        pthread_mutex_unlock(&ep->mu);
        return rc;
    }
    *r = req_new(ep, peer, is_send);
    if (!*r) {
        pthread_mutex_unlock(&ep->mu);
        return tether__fail(TETHER_ENOMEM, "out of memory posting a message to rank %d", peer);
    }
    return TETHER_OK;
}

/* Common exit: on failure the request is released and the error recorded. */
static int end(tether__tcp_ep *ep, struct tether_req *r, int rc, tether_req **out)
{
    if (rc < 0) {
        req_free(ep, r);
        rc = sticky(ep);
    } else {
        *out = r;
    }
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

int tether__tcp_tx_queue(tether__tcp_ep *ep, tether__link *l, tether__txmsg *t)
{
    int idle = l->txhead == NULL;
    tx_push(l, t);
    if (!idle) /* whoever flushes the frames ahead flushes this one too */
        return TETHER_OK;
    /* the short path: most small messages leave here, in one sendmsg */
    TRY(tether__tcp_flush(ep, l));
    if (l->txhead && ep->prog) /* the socket is full: the progress thread must poll for room */
        tether__tcp_progress_kick(ep);
    return TETHER_OK;
}

void tether__tcp_nudge(tether__tcp_ep *ep, tether__link *l, tether__txmsg *t)
{
    if (t)
        tx_push(l, t);
    int e = tx_flush(ep, l);
    if (e) {
        TLOG_TRACE("rank %d: writing to rank %d in the background: %s", ep->rank, l->peer,
                   strerror(e));
        tx_drop_beats(l);
    } else if (l->txhead && ep->prog) {
        tether__tcp_progress_kick(ep);
    }
}

int tether__tcp_isend(tether__tcp_ep *ep, int peer, const void *buf, size_t len, tether_tag tag,
                      tether_req **out)
{
    struct tether_req *r;
    int rc = TETHER_OK;
    TRY(begin(ep, peer, 1, &r));
    tether__rxcache_note(&ep->rxcache, len);
    if (ep->nlinks[peer] == 0)
        return end(ep, r, tether__tcp_route_send(ep, r, buf, len, tag), out);
    if (ep->links[peer][0].bye)
        return end(ep, r, tether__tcp_gone(ep, &ep->links[peer][0], "sends to it"), out);
    tether__frame f = {.tag = tag, .len = len, .type = TETHER__FRAME_DATA};
    int cma = tether__cma_use(ep, peer, len);
    for (int k = 0; k < ep->nlinks[peer] && rc == TETHER_OK; k++) {
        tether__link *l = &ep->links[peer][k];
        tether__txmsg *t = &r->part[k].tx;
        uint64_t off, n;
        if (!tether__stripe(len, l->nlinks, k, &off, &n))
            continue;
        t->req = r;
        r->parts_left++;
        if (cma) {
            tether__cma_describe(l, t, &f, (const unsigned char *)buf + off);
        } else {
            tether__frame_encode(&f, t->hdr);
            t->payload = (const unsigned char *)buf + off;
            t->len = n;
        }
        rc = tether__tcp_tx_queue(ep, l, t);
    }
    return end(ep, r, rc, out);
}

int tether__tcp_irecv(tether__tcp_ep *ep, int peer, void *buf, size_t len, tether_tag tag,
                      tether_req **out)
{
    struct tether_req *r;
    int rc = TETHER_OK;
    TRY(begin(ep, peer, 0, &r));
    tether__rxcache_note(&ep->rxcache, len);
    if (ep->nlinks[peer] == 0)
        return end(ep, r, tether__tcp_route_recv(ep, r, buf, len, tag), out);
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
    return end(ep, r, rc, out);
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
        if (read || l->cma_wait) /* a send left in memory finishes when the reader says so */
            TRY(tether__tcp_read(ep, l, 0));
    }
    return ep->err;
}

int tether__tcp_test(tether__tcp_ep *ep, tether_req *r, int *done)
{
    pthread_mutex_lock(&ep->mu);
    if (r->parts_left > 0 && !ep->err)
        progress_peer(ep, r->peer, !r->is_send);
    int rc = TETHER_OK;
    *done = r->parts_left == 0;
    if (*done || ep->err) { /* a request that finished before the break still reports done */
        rc = *done ? TETHER_OK : sticky(ep);
        req_free(ep, r);
    }
    if (ep->prog) {
        tether__tcp_progress_signal(ep); /* we may have finished another thread's request */
        tether__tcp_progress_seen(ep);
    }
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

/* ---- waiting ---- */

void tether__tcp_progress_ready(tether__tcp_ep *ep, const struct pollfd *pfd)
{
    for (int i = 0; i < ep->nflat && !ep->err; i++) {
        tether__link *l = ep->flat[i];
        if ((pfd[i].revents & POLLOUT) && l->txhead && tether__tcp_flush(ep, l) < 0)
            return;
        if (ep->prog && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
            tether__tcp_read(ep, l, 1);
        else if (!ep->prog && pfd[i].revents)
            tether__tcp_input_ready(ep, l, pfd[i].revents);
    }
}

/* A whole wait passed with nothing moving. If a send is stuck on a link whose peer has sent bytes
 * we have not asked for yet, that peer may be stuck sending to us in turn (both sent before
 * receiving, with messages larger than the socket buffers): take its bytes after all, as
 * unexpected messages, so both sends can finish. */
static void unblock_sends(tether__tcp_ep *ep)
{
    for (int i = 0; i < ep->nflat && !ep->err; i++)
        if (ep->flat[i]->held && ep->flat[i]->txhead)
            tether__tcp_read(ep, ep->flat[i], 1);
}

int tether__tcp_wait(tether__tcp_ep *ep, int timeout_ms)
{
    struct pollfd stack[POLL_STACK], *pfd = stack;
    if (ep->prog) /* the thread polls the sockets; we wait for what it moves */
        return tether__tcp_progress_wait(ep, timeout_ms);
    pthread_mutex_lock(&ep->mu);
    if (ep->err) {
        int rc = sticky(ep);
        pthread_mutex_unlock(&ep->mu);
        return rc;
    }
    if (ep->nflat > POLL_STACK && !(pfd = malloc((size_t)ep->nflat * sizeof *pfd))) {
        pthread_mutex_unlock(&ep->mu);
        return tether__fail(TETHER_ENOMEM, "out of memory polling %d links", ep->nflat);
    }
    /* every link, not only those of pending requests: a dead peer is noticed while we wait on
     * another */
    for (int i = 0; i < ep->nflat; i++)
        pfd[i] = (struct pollfd){.fd = ep->flat[i]->eof ? -1 : ep->flat[i]->fd, /* -1: not polled */
                                 .events = tether__tcp_poll_events(ep->flat[i])};
    pthread_mutex_unlock(&ep->mu);
    int n = poll(pfd, (nfds_t)ep->nflat, timeout_ms);
    int poll_errno = errno;
    pthread_mutex_lock(&ep->mu);
    if (n < 0 && poll_errno != EINTR)
        tether__tcp_break(ep, TETHER_ENET, "poll() on %d links: %s", ep->nflat,
                          strerror(poll_errno));
    else if (n > 0 && !ep->err)
        tether__tcp_progress_ready(ep, pfd);
    else if (n == 0 && !ep->err) {
        unblock_sends(ep);
        tether__cma_unblock(ep);
    }
    int rc = ep->err ? sticky(ep) : TETHER_OK;
    pthread_mutex_unlock(&ep->mu);
    if (pfd != stack)
        free(pfd);
    return rc;
}

/* ---- abort and close ---- */

/* Before a bye: drop the frames of requests that have not started (their buffers are going away).
 * A half-sent frame stays (the stream must stay parseable), and so do frames passing through to
 * another rank: they own their bytes, and that rank waits for them. */
static void tx_drop_requests(tether__link *l)
{
    tether__txmsg **pp = &l->txhead, *last = NULL;
    while (*pp) {
        tether__txmsg *t = *pp;
        if (t->req && t->sent == 0) {
            *pp = t->next;
            continue;
        }
        last = t;
        pp = &t->next;
    }
    l->txtail = last;
}

/* Queue a control frame (abort or bye) on l, behind a half-sent frame (which must finish first
 * to keep the stream parseable) unless that one is too long to wait for. An abort drops every
 * other queued frame, a bye those of requests; their requests fail or are freed. 0 when the link
 * gets no frame. */
static int queue_ctrl(tether__link *l, uint32_t type, int code, const char *text)
{
    tether__txmsg *head = l->txhead;
    if (head && head->sent > 0 && TETHER__FRAME_SIZE + head->len - head->sent > ABORT_TAIL_MAX)
        return 0;
    if (type == TETHER__FRAME_BYE) {
        tx_drop_requests(l);
    } else if (head && head->sent > 0) { /* keep only the half-sent frame */
        tx_forget(head->next);
        head->next = NULL;
        l->txtail = head;
    } else {
        tx_clear(l);
    }
    size_t len = strnlen(text, TETHER__ABORT_TEXT_MAX);
    tether__txmsg *t = calloc(1, sizeof *t + len);
    if (!t)
        return 0;
    memcpy(t + 1, text, len);
    tether__frame f = {.len = len, .type = type, .code = code};
    tether__frame_encode(&f, t->hdr);
    t->payload = (const unsigned char *)(t + 1);
    t->len = len;
    tx_push(l, t);
    return 1;
}

/* Write the control frames for at most ms; a peer that does not read loses its frame and sees
 * the connection close instead. */
static void flush_ctrl(tether__tcp_ep *ep, int ms)
{
    int64_t deadline = tether__net_now_ms() + ms;
    for (int i = 0; i < ep->nflat; i++) {
        tether__link *l = ep->flat[i];
        while (l->txhead && tx_flush(ep, l) == 0 && l->txhead) {
            int64_t left = deadline - tether__net_now_ms();
            struct pollfd p = {.fd = l->fd, .events = POLLOUT};
            if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                break;
        }
    }
}

void tether__tcp_abort(tether__tcp_ep *ep, int code, const char *msg)
{
    pthread_mutex_lock(&ep->mu);
    if (!ep->aborted) {
        ep->aborted = 1;
        for (int i = 0; i < ep->nflat; i++)
            queue_ctrl(ep->flat[i], TETHER__FRAME_ABORT, code, msg);
        flush_ctrl(ep, CTRL_FLUSH_MS);
        tether__tcp_break(ep, code, "%s", msg); /* no-op when a link failure broke us first */
        /* shutdown, not close: it wakes threads sleeping in poll on these sockets, and the file
         * descriptors cannot be reused under them before close() */
        for (int i = 0; i < ep->nflat; i++)
            shutdown(ep->flat[i]->fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&ep->mu);
}

static void log_link_bytes(const tether__tcp_ep *ep)
{
    for (int i = 0; i < ep->nflat; i++) {
        const tether__link *l = ep->flat[i];
        TLOG_INFO("link %d with rank %d (%s): sent %llu bytes, received %llu", l->index, l->peer,
                  ep->addr[l->peer], (unsigned long long)l->bytes_sent,
                  (unsigned long long)l->bytes_recvd);
    }
}

/* A normal close tells every peer, so that peers still busy with others do not take our exit
 * for a crash. Reading what is left first makes close() send FIN rather than RST, which could
 * destroy the bye before the peer reads it. */
static void say_bye(tether__tcp_ep *ep)
{
    for (int i = 0; i < ep->nflat; i++)
        queue_ctrl(ep->flat[i], TETHER__FRAME_BYE, 0, "");
    flush_ctrl(ep, CTRL_FLUSH_MS);
    for (int i = 0; i < ep->nflat; i++) {
        tether__link *l = ep->flat[i];
        shutdown(l->fd, SHUT_WR);
        while (recv(l->fd, l->rbuf, TETHER__RBUF_SIZE, 0) > 0)
            continue;
    }
}

void tether__tcp_close(tether__tcp_ep *ep)
{
    if (!ep)
        return;
    tether__heartbeat_stop(ep->beat); /* first: it queues frames, and the bye must be the last */
    ep->beat = NULL;
    if (ep->prog)
        tether__tcp_progress_stop(ep, 0);
    pthread_mutex_lock(&ep->mu);
    log_link_bytes(ep);
    tether__cma_withdraw(ep);
    if (!ep->err)
        say_bye(ep);
    for (int i = 0; i < ep->nflat + ep->nvirt; i++) {
        tether__link *l = ep->flat[i];
        tx_clear(l);
        tether__tcp_rx_clear(ep, l);
        if (l->fd >= 0)
            close(l->fd);
        free(l->rbuf);
    }
    while (ep->live)
        req_free(ep, ep->live);
    tether__rxcache_clear(&ep->rxcache);
    for (int p = 0; ep->links && p < ep->size; p++)
        free(ep->links[p]);
    free(ep->links);
    free(ep->nlinks);
    free(ep->flat);
    free(ep->addr);
    free(ep->via);
    pthread_mutex_unlock(&ep->mu);
    pthread_mutex_destroy(&ep->mu);
    free(ep);
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

/* ---- creation ---- */

/* Links between processes of one host get the smaller send buffer tether__net_local_sndbuf_default
 * explains and a receive window as large (local_sndbuf bytes; 0 leaves both as they are). */
static int take_links(tether__tcp_ep *ep, tether__net_links *links, long local_sndbuf)
{
    ep->one_host = 1;
    for (int p = 0; p < ep->size; p++) {
        int k = links->nlinks[p];
        ep->nlinks[p] = k;
        memcpy(ep->addr[p], links->addr[p], sizeof ep->addr[p]);
        ep->links[p] = calloc((size_t)(k ? k : 1), sizeof **ep->links);
        if (!ep->links[p])
            return tether__fail(TETHER_ENOMEM, "out of memory for the links to rank %d", p);
        for (int i = 0; i < k; i++) {
            tether__link *l = &ep->links[p][i];
            l->peer = p;
            l->index = i;
            l->nlinks = k;
            l->fd = links->fds[p][i];
            links->fds[p][i] = -1;
            int local = tether__net_same_host(l->fd);
            ep->one_host &= local;
            if (local && local_sndbuf) {
                char what[TETHER__ADDR_TEXT + 48];
                snprintf(what, sizeof what, "link %d with rank %d (%s)", i, p, links->addr[p]);
                TRY(tether__net_set_local_bufs(l->fd, local_sndbuf, what));
            }
            ep->flat[ep->nflat++] = l;
            if (!(l->rbuf = malloc(TETHER__RBUF_SIZE)))
                return tether__fail(TETHER_ENOMEM, "out of memory for the receive buffers");
        }
    }
    return TETHER_OK;
}

int tether__tcp_ep_create(tether__net_links *links, int rank, const char *backend,
                          tether__tcp_ep **out)
{
    long max_io, local_sndbuf;
    int total = 0, rc;
    TRY(tether__env_long("TETHER_TCP_MAX_IO", MAX_IO_DEFAULT, 64, MAX_IO_DEFAULT, &max_io));
    TRY(tether__env_long("TETHER_TCP_LOCAL_SNDBUF", tether__net_local_sndbuf_default(), 0, 1L << 30,
                         &local_sndbuf));
    if (local_sndbuf > 0 && local_sndbuf < TETHER__NET_LOCAL_SNDBUF_MIN)
        return tether__fail(TETHER_ECONFIG,
                            "TETHER_TCP_LOCAL_SNDBUF=%ld: expected 0 (the system's) or at least "
                            "%ld bytes; smaller buffers stall loopback transfers",
                            local_sndbuf, TETHER__NET_LOCAL_SNDBUF_MIN);
    for (int p = 0; p < links->size; p++)
        total += links->nlinks[p];
    tether__tcp_ep *ep = calloc(1, sizeof *ep);
    if (!ep)
        return tether__fail(TETHER_ENOMEM, "out of memory for the %s endpoint", backend);
    pthread_mutex_init(&ep->mu, NULL);
    ep->backend = backend;
    ep->rank = rank;
    ep->size = links->size;
    ep->max_io = (uint64_t)max_io;
    ep->links = calloc((size_t)ep->size, sizeof *ep->links);
    ep->nlinks = calloc((size_t)ep->size, sizeof *ep->nlinks);
    ep->flat = calloc((size_t)(total + links->size), sizeof *ep->flat); /* + queue-only links */
    ep->addr = calloc((size_t)ep->size, sizeof *ep->addr);
    if (!ep->links || !ep->nlinks || !ep->flat || !ep->addr)
        rc = tether__fail(TETHER_ENOMEM, "out of memory for the %s endpoint", backend);
    else if ((rc = take_links(ep, links, local_sndbuf)) == TETHER_OK &&
             (rc = tether__cma_min(&ep->cma_min)) == 0)
        rc = tether__cma_negotiate(ep, links->timeout_ms);
    if (rc < 0) {
        ep->err = rc; /* never formed: no bye to anyone */
        tether__tcp_close(ep);
        return rc;
    }
    *out = ep;
    return TETHER_OK;
}

uint64_t tether__tcp_moved_total(tether__tcp_ep *ep)
{
    uint64_t total = 0;
    pthread_mutex_lock(&ep->mu);
    for (int i = 0; i < ep->nflat; i++) {
        const tether__link *l = ep->flat[i];
        size_t in = 0, out = 0;
        if (l->fd >= 0)
            tether__net_queued(l->fd, &in, &out);
        total += l->bytes_recvd + in + (l->bytes_sent > out ? l->bytes_sent - out : 0);
    }
    pthread_mutex_unlock(&ep->mu);
    return total;
}

int tether__tcp_one_host(const tether__tcp_ep *ep)
{
    return ep->one_host;
}

int tether__tcp_ep_route(tether__tcp_ep *ep, const int *via)
{
    if (!(ep->via = malloc((size_t)ep->size * sizeof *ep->via)))
        return tether__fail(TETHER_ENOMEM, "out of memory for the routes of %d ranks", ep->size);
    memcpy(ep->via, via, (size_t)ep->size * sizeof *ep->via);
    for (int p = 0; p < ep->size; p++) {
        if (p == ep->rank || ep->nlinks[p] > 0)
            continue;
        /* take_links allocated one zeroed link for every peer without sockets */
        tether__link *q = &ep->links[p][0];
        q->fd = -1;
        q->peer = p;
        q->nlinks = 1;
        ep->flat[ep->nflat + ep->nvirt++] = q;
    }
    return TETHER_OK;
}
