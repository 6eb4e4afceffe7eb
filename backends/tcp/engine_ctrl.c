/* backends/tcp/engine_ctrl.c - the control frames a failing or closing endpoint sends its peers:
 * abort (with the reason) and bye. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backends/net/socket.h"
#include "engine_break.h"
#include "engine_ctrl.h"
#include "engine_impl.h"
#include "engine_lane.h"
#include "engine_shm.h"
#include "engine_write.h"

#define CTRL_FLUSH_MS 500 /* how long abort() and close() try to get their frame out */

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
    l->ack = NULL; /* may be among the frames dropped; none follows a control frame */
    if (l->fd < 0 || l->cut || (head && head->sent > 0 && !tether__tcp_tail_fits(head)))
        return 0;
    if (type == TETHER__FRAME_BYE) {
        tx_drop_requests(l);
    } else if (head && head->sent > 0) { /* keep only the half-sent frame */
        tether__tcp_tx_forget(head->next);
        head->next = NULL;
        l->txtail = head;
    } else {
        tether__tcp_tx_clear(l);
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
    tether__tcp_tx_push(l, t);
    return 1;
}

/* Write the control frames for at most ms; a peer that does not read loses its frame and sees
 * the connection close instead. */
static void flush_ctrl(tether__tcp_ep *ep, int ms)
{
    int64_t deadline = tether__net_now_ms() + ms;
    for (int i = 0; i < ep->nflat; i++) {
        tether__link *l = ep->flat[i];
        while (l->txhead && tether__tcp_tx_flush(ep, l) == 0 && l->txhead) {
            int64_t left = deadline - tether__net_now_ms();
            struct pollfd p = {.fd = l->fd, .events = tether__tcp_shm_events(l, 0)};
            if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                break;
            if (l->shm_rx && (p.revents & POLLIN))
                tether__tcp_shm_bells(l); /* room came, or the peer's end */
            if (l->sock_eof)
                break;
        }
    }
}

void tether__tcp_abort(tether__ep *tep, int code, const char *msg)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
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

/* A normal close tells every peer, so that peers still busy with others do not take our exit
 * for a crash. Reading what is left first makes close() send FIN rather than RST, which could
 * destroy the bye before the peer reads it. */
void tether__tcp_say_bye(tether__tcp_ep *ep)
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
