/* backends/tcp/route.c - messages between ranks with no link: sent through a neighbour, passed on.
 *
 * The ring links each rank to its two neighbours only. A message to any other rank travels as one
 * routed frame (frame.h) on link 0 towards it, the shorter way round (the ring backend fills via);
 * each rank on the way reads it whole into a block of its own and queues it on, in arrival order,
 * so messages between a pair keep their order. The destination matches it against the receives
 * posted for its origin with the usual tag, signature and length checks. Routed messages are not
 * striped: they are the small traffic of trees and barriers, or point-to-point between distant
 * ranks, while the bandwidth collectives only talk to neighbours. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine_impl.h"

tether__link *tether__tcp_hop(tether__tcp_ep *ep, int peer)
{
    return &ep->links[ep->nlinks[peer] > 0 ? peer : ep->via[peer]][0];
}

int tether__tcp_route_send(tether__tcp_ep *ep, struct tether_req *r, const void *buf, size_t len,
                           tether_tag tag)
{
    int peer = r->peer;
    if (!ep->via)
        return tether__fail(TETHER_EINTERNAL, "%s: rank %d has no link to rank %d", ep->backend,
                            ep->rank, peer);
    tether__frame f = {.tag = tag,
                       .len = len,
                       .type = TETHER__FRAME_ROUTED,
                       .code = tether__route_code(ep->rank, peer)};
    tether__txmsg *t = &r->part[0].tx;
    tether__frame_encode(&f, t->hdr);
    t->payload = buf;
    t->len = len;
    t->req = r;
    r->parts_left = 1;
    return tether__tcp_tx_queue(ep, tether__tcp_hop(ep, peer), t);
}

int tether__tcp_route_recv(tether__tcp_ep *ep, struct tether_req *r, void *buf, size_t len,
                           tether_tag tag)
{
    tether__rxmsg *m = &r->part[0].rx;
    if (!ep->via)
        return tether__fail(TETHER_EINTERNAL, "%s: rank %d has no link to rank %d", ep->backend,
                            ep->rank, r->peer);
    *m = (tether__rxmsg){.tag = tag, .msglen = len, .len = len, .buf = buf, .req = r};
    r->parts_left = 1;
    return tether__tcp_post_recv(ep, &ep->links[r->peer][0], r, m);
}

int tether__tcp_route_start(tether__tcp_ep *ep, tether__link *l, const tether__frame *f)
{
    if (!tether__rxcache_admits(&ep->rxcache, f->len, f->tag) ||
        f->len > SIZE_MAX - sizeof(tether__fwd))
        return tether__tcp_too_long(ep, l, f->len, f->tag);
    tether__fwd *fw = malloc(sizeof *fw + (size_t)f->len);
    if (!fw)
        return tether__tcp_break(ep, TETHER_ENOMEM,
                                 "rank %d: out of memory passing on %llu bytes from rank %d to "
                                 "rank %d",
                                 ep->rank, (unsigned long long)f->len, tether__route_src(f->code),
                                 tether__route_dst(f->code));
    memset(fw, 0, sizeof *fw);
    tether__frame_encode(f, fw->tx.hdr); /* unchanged: origin, destination, tag, length */
    fw->tx.payload = (const unsigned char *)(fw + 1);
    fw->tx.len = f->len;
    fw->rx = (tether__rxmsg){
        .tag = f->tag, .msglen = f->len, .len = f->len, .buf = (unsigned char *)(fw + 1)};
    l->cur = &fw->rx;
    l->cur_fwd = 1;
    return TETHER_OK;
}

int tether__tcp_route_pass(tether__tcp_ep *ep, const tether__link *from, tether__rxmsg *m)
{
    tether__fwd *fw = (tether__fwd *)((char *)m - offsetof(tether__fwd, rx));
    tether__frame f;
    tether__frame_decode(fw->tx.hdr, &f);
    int src = tether__route_src(f.code), dst = tether__route_dst(f.code);
    tether__link *next = tether__tcp_hop(ep, dst);
    if (next->peer == from->peer || next->eof) {
        free(fw);
        return tether__tcp_break(ep, TETHER_EPEER,
                                 "rank %d cannot pass on a message from rank %d to rank %d: %s",
                                 ep->rank, src, dst,
                                 next->eof ? "the next rank on the way has left the ring"
                                           : "it came from the way it should go (ranks disagree "
                                             "on the ring: check the hostfiles are the same)");
    }
    return tether__tcp_tx_queue(ep, next, &fw->tx);
}

/* ---- leaving ----
 * A rank that closes may still be on the way of messages between ranks that have not finished
 * (the last round of a barrier, say), so it keeps passing frames on until no rank can send any
 * more. Each closing rank sends a leave notice to its neighbours; each rank passes a notice on
 * to its other neighbour unless that is the notice's origin, so every rank gets every other rank's
 * notice once from each side. A notice travels behind the frames its origin sent earlier, on the
 * same links, so once a rank holds them all nothing will pass through it again. */

static int queue_leave(tether__tcp_ep *ep, int to, int origin)
{
    tether__txmsg *t = calloc(1, sizeof *t); /* no request: freed once sent */
    if (!t)
        return tether__tcp_break(ep, TETHER_ENOMEM, "out of memory for a leave notice");
    tether__frame f = {.type = TETHER__FRAME_LEAVE, .code = origin};
    tether__frame_encode(&f, t->hdr);
    return tether__tcp_tx_queue(ep, &ep->links[to][0], t);
}

int tether__tcp_route_leave(tether__tcp_ep *ep)
{
    for (int p = 0; p < ep->size; p++)
        if (ep->nlinks[p] > 0 && !ep->links[p][0].eof)
            TRY(queue_leave(ep, p, ep->rank));
    return TETHER_OK;
}

int tether__tcp_route_leave_rx(tether__tcp_ep *ep, tether__link *l, const tether__frame *f)
{
    int origin = f->code;
    if (f->len != 0 || origin < 0 || origin >= ep->size || origin == ep->rank || !ep->via)
        return tether__tcp_protocol_error(ep, l, "a malformed leave notice");
    ep->leaves_seen++;
    ep->events++;
    for (int p = 0; p < ep->size; p++)
        if (ep->nlinks[p] > 0 && p != l->peer && p != origin && !ep->links[p][0].eof)
            TRY(queue_leave(ep, p, origin));
    return TETHER_OK;
}

int tether__tcp_route_all_left(const tether__tcp_ep *ep)
{
    int neighbours = 0;
    for (int p = 0; p < ep->size; p++)
        neighbours += ep->nlinks[p] > 0;
    return ep->leaves_seen >= neighbours * (ep->size - 1);
}
