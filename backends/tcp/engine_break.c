/* backends/tcp/engine_break.c - breaking an endpoint: the first failure wins, every request fails,
 * and every link forgets what it holds of the program's (its send queue, what its lane kept, its
 * receives), so nothing touches a user buffer again.
 *
 * Every part of the engine breaks the endpoint when it fails: the two halves (engine.c,
 * engine_rx.c), the lanes (engine_lane.c), the heartbeats. So this file sits beneath them all and
 * calls none of them: what each part holds is forgotten here, beside the break that needs it
 * (close, engine_close.c, forgets the same). */
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_break.h"
#include "engine_impl.h"

/* ---- what a link holds, forgotten ---- */

void tether__tcp_tx_forget(tether__txmsg *t)
{
    while (t) {
        tether__txmsg *next = t->next;
        if (!t->req)
            free(t);
        t = next;
    }
}

void tether__tcp_tx_clear(tether__link *l)
{
    tether__tcp_tx_forget(l->txhead);
    l->txhead = l->txtail = NULL;
    l->passing = 0;
    l->pass_extra = 0;
}

void tether__tcp_lane_clear(tether__link *l)
{
    tether__tcp_tx_forget(l->kept);
    l->kept = l->kept_tail = NULL;
    l->awaiting = 0;
    l->copies = 0;
    l->ack = NULL; /* in the queue, which its link clears */
    l->tunnel_queued = 0;
    if (l->pump >= 0 && l->lane == TETHER__LANE_TUNNEL)
        close(l->pump);
    l->pump = -1;
    free(l->in);
    l->in = NULL;
    l->inlen = l->incap = 0;
    if (l->nlinks > 1 && l->newfd >= 0)
        close(l->newfd);
    l->newfd = -1;
}

static void free_heap_queue(tether__tcp_ep *ep, tether__rxq *q)
{
    while (q->head) {
        tether__rxmsg *m = q->head;
        q->head = m->next;
        if (m->heap)
            tether__rxcache_put(&ep->rxcache, m);
    }
    q->tail = NULL;
}

void tether__tcp_rx_clear(tether__tcp_ep *ep, tether__link *l)
{
    /* cur is either in the unexpected queue, a posted part (owned by its request) or an abort
     * frame's text (owned by the link) */
    if (l->rx == TETHER__RX_ABORT || l->rx == TETHER__RX_BEAT || l->rx == TETHER__RX_TUNNEL)
        tether__rxcache_put(&ep->rxcache, l->cur);
    else if (l->rx == TETHER__RX_PASSING) /* not queued yet: the block is still ours */
        free((char *)l->cur - offsetof(tether__fwd, rx));
    else if (l->rx == TETHER__RX_DATA && l->cur->heap && l->cur->req) /* claimed while arriving */
        tether__rxcache_put(&ep->rxcache, l->cur);
    if (l->joining && l->joining->heap && l->joining->req) /* claimed while its chunks arrive */
        tether__rxcache_put(&ep->rxcache, l->joining);
    l->joining = NULL; /* unclaimed: in the unexpected queue, freed below */
    l->cur = NULL; /* RX_MEMORY: the memory path's own message; RX_CHUNK: its origin's joining */
    l->rx = TETHER__RX_HEADER;
    tether__cma_rx_clear(&l->cma);
    l->posted.head = l->posted.tail = NULL;
    free_heap_queue(ep, &l->unexpected);
    l->rlen = 0;
}

void tether__tcp_cma_withdraw(tether__tcp_ep *ep)
{
    int any = 0;
    for (int i = 0; i < ep->nflat; i++)
        any |= tether__cma_forget(&ep->flat[i]->cma);
    if (any)
        tether__cma_withdrew();
}

/* ---- errors ---- */

/* After a break: forget l's queued frames but a half-sent one, whose tail must still go out before
 * an abort frame can: the peer would read a cut frame and the abort behind it as garbage, and
 * report a malformed stream instead of our reason. A request's frame becomes the link's own, its
 * unsent bytes copied (the request fails now, and its buffer, which holds a CMA descriptor's
 * bytes too, is the program's again); one with more than TETHER__TAIL_MAX left cuts the link. */
static void tx_keep_tail(tether__tcp_ep *ep, tether__link *l)
{
    tether__txmsg *t = l->txhead;
    if (!t || t->sent == 0 || l->fd < 0) {
        tether__tcp_tx_clear(l);
        return;
    }
    tether__tcp_tx_forget(t->next);
    t->next = NULL;
    l->txtail = t;
    if (!t->req)
        return;
    uint64_t done = t->sent > TETHER__FRAME_SIZE ? t->sent - TETHER__FRAME_SIZE : 0;
    uint64_t left = t->len - done; /* payload bytes to go */
    tether__txmsg *o = tether__tcp_tail_fits(t) ? calloc(1, sizeof *o + left) : NULL;
    l->txhead = l->txtail = o;
    if (!o) {
        l->cut = 1;
        TLOG_INFO("rank %d: the link to rank %d ends inside a frame; it gets no abort frame",
                  ep->rank, l->peer);
        return;
    }
    memcpy(o->hdr, t->hdr, sizeof o->hdr);
    if (left)
        memcpy(o + 1, t->payload + done, (size_t)left);
    o->payload = (const unsigned char *)(o + 1);
    o->len = left;
    o->sent = t->sent < TETHER__FRAME_SIZE ? t->sent : TETHER__FRAME_SIZE;
}

int tether__tcp_break(tether__tcp_ep *ep, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int first = tether__net_fail_first(&ep->err, ep->errmsg, ep->backend, code, fmt, ap);
    va_end(ap);
    if (!first)
        return ep->err;
    ep->events++;
    if (ep->loop) /* tell the neighbours now, even while the thread stands by */
        tether__loop_kick(ep->loop);
    tether__tcp_cma_withdraw(ep);
    for (int i = 0; i < ep->nflat + ep->nvirt; i++) {
        tether__tcp_lane_clear(ep->flat[i]);
        tx_keep_tail(ep, ep->flat[i]);
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

int tether__tcp_protocol_error(tether__tcp_ep *ep, const tether__link *l, const char *what)
{
    return tether__tcp_break(ep, TETHER_ENET,
                             "rank %d (%s) sent a malformed frame on link %d (%s): is "
                             "something else writing to this port, or a different tether version?",
                             l->peer, ep->addr[l->peer], l->index, what);
}

int tether__tcp_sticky(const tether__tcp_ep *ep)
{
    return tether__fail(ep->err, "%s", ep->errmsg);
}
