/* backends/tcp/engine_lane.c - the lanes of a pair with several links: a link that dies is carried
 * through another, and the job goes on.
 *
 * A message to a peer with K links is striped over K lanes (frame.h), and stays so: sender and
 * receiver never have to agree on a new stripe. Each lane is a byte stream: every frame it carries
 * but heartbeats and acks, header and payload. The sender counts what it wrote (tx_pos), the
 * receiver what its parser consumed (rx_pos), so a position means the same on both sides, even in
 * the middle of a frame. The sender keeps every frame it wrote until the receiver acknowledges it
 * (an ack frame: the receiver's position, cumulative): small frames are copied as they finish, so
 * their request finishes at once as on a single link; a larger frame's request part finishes only
 * with its ack (its buffer is the copy), which the receiver sends as soon as it has consumed the
 * frame, and every TETHER__LANE_ACK_EVERY bytes and heartbeat period for the rest.
 *
 * A lane whose socket fails, closes without a bye, or carries no byte for one and a half heartbeat
 * periods while another lane of the pair does (the heartbeats then go on every lane of the pair:
 * a cable pulled or silent leaves the socket up for minutes) is taken out: its socket closed, its
 * read-ahead dropped, and the peer told on a live lane how far this side consumed (a failover
 * frame); the peer does the same. Each side then replays its lane's stream from the position the
 * other consumed, through a socketpair standing in for the socket: what the engine writes on the
 * lane is read from the pair's other end and sent as tunnel frames on a live lane (the carrier);
 * the tunnel frames' payload arriving at the peer is written into its own pair, whose lane end the
 * engine reads as it read the socket, its parser going on where it stopped. The engine's send and
 * receive paths do not change; one stderr line per side says which link left, when and why. The
 * job fails as before when no lane to the peer is left (the peer silent: TETHER_ETIMEDOUT within
 * TETHER__HEARTBEATS_MISSED periods).
 *
 * A lane taken out comes back (engine_rejoin.c): the side that opened it at set-up dials it again,
 * about once a second, the other accepts, with the hello of set-up. Each side, holding the new
 * socket, stops reading the tunnel (what comes through it later is dropped) and says on a live
 * lane how far it consumed (a switch frame); once it has the peer's too, it replays its stream
 * from there on the new socket, as a failover does through the socketpair, so no byte is lost or
 * doubled and the tunnel's bytes before the switch come first. One stderr line per side says it.
 * A lane back that fails again is taken out again.
 *
 * What the sender keeps for the replay is engine_kept.c's; what the receiver does with the frames
 * of a lane is the parser's (engine_rx.c), which calls here for the lanes' own frames. Every link's
 * flush is here too, since it moves the tunnels after a write and takes a lane out when the write
 * fails, and the lanes flush in turn; pairs with one link only pass through it: their frames
 * finish when written, as before. This file calls nothing of the halves (engine.c, engine_rx.c):
 * beneath them, it writes through engine_write.c and breaks ep through engine_break.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backends/net/socket.h"
#include "engine_break.h"
#include "engine_impl.h"
#include "engine_kept.h"
#include "engine_lane.h"
#include "engine_write.h"

/* The receiver acks at least every this many bytes consumed (what small frames' copies cost). */
#define TETHER__LANE_ACK_EVERY ((uint64_t)1 << 20)
/* Stream bytes one tunnel frame carries, and what a carrier may hold queued of them: beyond, the
 * tunnelled lane's writes wait (its socketpair fills) until the carrier drains. 64 KiB: below
 * malloc's mmap threshold, so a chunk's block comes back from the heap warm, where a fresh mapping
 * paid a page fault per 4 KiB (docs/perf/notes.md on the receive cache). */
#define TETHER__TUNNEL_CHUNK ((size_t)64 << 10)
#define TETHER__TUNNEL_QUEUED_MAX ((uint64_t)8 << 20)
/* Buffers of the socketpair that stands in for a lane's socket. */
#define TETHER__TUNNEL_BUF (4 << 20)

#ifdef POLLRDHUP
#define LANE_HANGUP (POLLHUP | POLLERR | POLLRDHUP)
#else
#define LANE_HANGUP (POLLHUP | POLLERR)
#endif

/* Unlink from l's queue the frames outside its stream (heartbeats, acks): they were for a socket
 * that is gone, and a replay starts at a frame's byte. */
static void drop_uncounted(tether__link *l)
{
    tether__txmsg **pp = &l->txhead, *last = NULL;
    while (*pp) {
        tether__txmsg *t = *pp;
        if (!t->req && (t->beat || t->ack)) {
            *pp = t->next;
            free(t);
            continue;
        }
        last = t;
        pp = &t->next;
    }
    l->txtail = last;
    l->ack = NULL;
}

/* A live lane of l's pair to carry its stream, or NULL: one with its socket and no hang-up on it.
 */
static tether__link *carrier_for(tether__tcp_ep *ep, const tether__link *l)
{
    for (int k = 0; k < l->nlinks; k++) {
        tether__link *o = &ep->links[l->peer][k];
        struct pollfd p = {.fd = o->fd, .events = LANE_HANGUP};
        if (o == l || o->lane != TETHER__LANE_DIRECT || o->fd < 0 || o->eof || o->bye)
            continue;
        if (poll(&p, 1, 0) == 1 && (p.revents & LANE_HANGUP)) /* the peer's whole host went */
            continue;
        return o;
    }
    return NULL;
}

/* "local -> peer" of l's socket, for the line that says it left; the peer's listening address
 * where the socket no longer says (the peer reset it first). */
static void socket_text(const tether__tcp_ep *ep, const tether__link *l, char *out, size_t n)
{
    int fd = l->fd;
    struct sockaddr_storage a, b;
    socklen_t la = sizeof a, lb = sizeof b;
    char mine[TETHER__ADDR_TEXT], theirs[TETHER__ADDR_TEXT];
    if (getsockname(fd, (struct sockaddr *)&a, &la) < 0 ||
        getpeername(fd, (struct sockaddr *)&b, &lb) < 0) {
        snprintf(out, n, "rank %d at %s", l->peer, ep->addr[l->peer]);
        return;
    }
    tether__net_addr_text((struct sockaddr *)&a, mine, sizeof mine);
    tether__net_addr_text((struct sockaddr *)&b, theirs, sizeof theirs);
    snprintf(out, n, "%s -> %s", mine, theirs);
}

/* Queue a header-only frame on c and write what its socket takes; never breaks ep (the heartbeat
 * thread calls this too): a failure shows on the next call's flush of c. */
static void queue_header(tether__tcp_ep *ep, tether__link *c, const tether__frame *f)
{
    tether__txmsg *t = calloc(1, sizeof *t);
    if (!t)
        return;
    tether__frame_encode(f, t->hdr);
    tether__tcp_tx_push(c, t);
    if (c->txhead == t && tether__tcp_tx_flush(ep, c) == 0)
        tether__tcp_kick_for_room(ep, c);
}

int tether__tcp_lane_down(tether__tcp_ep *ep, tether__link *l, const char *why)
{
    char at[32], where[2 * TETHER__ADDR_TEXT + 8];
    if (l->nlinks < 2 || l->lane != TETHER__LANE_DIRECT || ep->err)
        return -1;
    tether__link *c = carrier_for(ep, l);
    if (!c)
        return -1;
    socket_text(ep, l, where, sizeof where);
    shutdown(l->fd, SHUT_RDWR); /* wakes a thread asleep in poll() on it */
    close(l->fd);
    l->fd = -1;
    l->lane = TETHER__LANE_WAIT;
    l->rlen = 0; /* read ahead, not consumed: the peer sends it again */
    l->held = l->hangup = 0;
    drop_uncounted(l);
    c->carrier = 1;
    l->via = c->index;
    tether__net_clock_text(at, sizeof at);
    fprintf(stderr,
            "tether: rank %d: link %d to rank %d (%s) left at %s (%s); its traffic goes through "
            "link %d\n",
            ep->rank, l->index, l->peer, where, at, why, c->index);
    tether__frame f = {.type = TETHER__FRAME_FAILOVER, .code = l->index, .len = l->rx_pos};
    queue_header(ep, c, &f);
    if (ep->loop)
        tether__loop_kick(ep->loop); /* its poll set changed */
    if (ep->lane_out)
        ep->lane_out(ep); /* dial or accept it again */
    return 0;
}

/* Write into l's socketpair what its tunnel brought: the engine reads it from l's end. */
static void feed(tether__link *l)
{
    while (l->inlen > 0 && l->lane == TETHER__LANE_TUNNEL) {
        ssize_t n = send(l->pump, l->in, l->inlen, MSG_DONTWAIT | TETHER__SEND_FLAGS);
        if (n <= 0)
            return; /* full: the next read of l makes room */
        memmove(l->in, l->in + n, l->inlen - (size_t)n);
        l->inlen -= (size_t)n;
    }
}

/* What the engine wrote on tunnelled lane l, read from its socketpair, as tunnel frames on its
 * carrier. 1 when some moved. */
static int pump(tether__tcp_ep *ep, tether__link *l)
{
    tether__link *c = &ep->links[l->peer][l->via];
    int moved = 0;
    while (c->tunnel_queued < TETHER__TUNNEL_QUEUED_MAX) {
        tether__txmsg *t = malloc(sizeof *t + TETHER__TUNNEL_CHUNK);
        ssize_t n = t ? recv(l->pump, t + 1, TETHER__TUNNEL_CHUNK, MSG_DONTWAIT) : -1;
        if (n <= 0) {
            free(t);
            break;
        }
        memset(t, 0, sizeof *t);
        tether__frame f = {.type = TETHER__FRAME_TUNNEL, .code = l->index, .len = (uint64_t)n};
        tether__frame_encode(&f, t->hdr);
        t->payload = (const unsigned char *)(t + 1);
        t->len = (uint64_t)n;
        t->tunnel = 1;
        c->tunnel_queued += (uint64_t)n;
        tether__tcp_tx_push(c, t);
        moved = 1;
    }
    return moved;
}

int tether__tcp_lane_move(tether__tcp_ep *ep, tether__link *l)
{
    static _Thread_local int moving; /* the flushes below come back here */
    if (moving || (l->lane != TETHER__LANE_TUNNEL && !l->carrier) || ep->err)
        return ep->err;
    moving = 1;
    tether__link *lanes = ep->links[l->peer];
    /* twice: a carrier taken out in turn takes the frames a later lane pumped onto it */
    for (int k = 0; k < 2 * l->nlinks; k++) {
        tether__link *t = &lanes[k % l->nlinks];
        if (t->lane != TETHER__LANE_TUNNEL)
            continue;
        feed(t);
        do
            tether__tcp_tx_flush(ep, t);
        while (pump(ep, t) && t->txhead);
    }
    for (int k = 0; k < l->nlinks && !ep->err; k++)
        if (lanes[k].carrier && lanes[k].txhead && lanes[k].lane == TETHER__LANE_DIRECT)
            tether__tcp_flush(ep, &lanes[k]);
    moving = 0;
    return ep->err;
}

/* ---- flushing a link ---- */

/* Every link is flushed here, not only those of pairs with several links: after its write the
 * tunnels of its pair move, and a write that fails takes its lane out before anything breaks ep.
 * The lanes flush in turn (lane_move, queue_header), so the flush lives with them, above the plain
 * write (engine_write.c). */

int tether__tcp_tx_flush(tether__tcp_ep *ep, tether__link *l)
{
    if (l->fd < 0) /* a lane taken out, waiting for its peer's position (lane_down) */
        return 0;
    int e = tether__tcp_tx_write(ep, l);
    if (!e && l->nlinks > 1)
        tether__tcp_lane_move(ep, l);
    return e;
}

int tether__tcp_flush(tether__tcp_ep *ep, tether__link *l)
{
    int e = tether__tcp_tx_flush(ep, l);
    if (!e || tether__tcp_lane_down(ep, l, strerror(e)) == 0)
        return TETHER_OK;
    tether__tcp_tx_drop_beats(l);
    if (!l->txhead) /* only heartbeats were lost: a later call on this peer tells what became of it
                     */
        return TETHER_OK;
    return tether__tcp_break(
        ep, e == EPIPE || e == ECONNRESET ? TETHER_EPEER : TETHER_ENET,
        "send to rank %d (%s) failed: %s%s", l->peer, ep->addr[l->peer], strerror(e),
        e == EPIPE || e == ECONNRESET ? "; it probably exited, see its output" : "");
}

void tether__tcp_lane_ack(tether__tcp_ep *ep, tether__link *l)
{
    if (ep->err || l->lane == TETHER__LANE_WAIT || l->rx_pos == l->rx_acked || l->eof || l->bye)
        return;
    tether__frame f = {.type = TETHER__FRAME_ACK, .code = l->index, .len = l->rx_pos};
    if (l->ack) { /* queued and not begun: say the newer position instead */
        tether__frame_encode(&f, l->ack->hdr);
        l->rx_acked = l->rx_pos;
        return;
    }
    tether__txmsg *t = calloc(1, sizeof *t);
    if (!t)
        return; /* the next trigger tries again */
    tether__frame_encode(&f, t->hdr);
    t->ack = 1;
    l->ack = t;
    l->rx_acked = l->rx_pos;
    /* before the frames not begun: the peer's sends wait for it */
    tether__txmsg **at = &l->txhead;
    if (*at && (*at)->sent)
        at = &(*at)->next;
    t->next = *at;
    *at = t;
    if (!t->next)
        l->txtail = t;
    if (l->txhead == t && tether__tcp_tx_flush(ep, l) == 0)
        tether__tcp_kick_for_room(ep, l);
}

void tether__tcp_lane_consumed(tether__tcp_ep *ep, tether__link *l)
{
    if (l->ack_due && l->rx_pos >= l->ack_due) {
        l->ack_due = 0;
        tether__tcp_lane_ack(ep, l);
    } else if (l->rx_pos - l->rx_acked >= TETHER__LANE_ACK_EVERY) {
        tether__tcp_lane_ack(ep, l);
    }
}

static int start_switch(tether__tcp_ep *ep, tether__link *l);

/* The peer took lane idx out and consumed pos bytes of it: take it out here too if this side has
 * not, then replay from pos through the socketpair. */
static int failed_over(tether__tcp_ep *ep, tether__link *c, int idx, uint64_t pos)
{
    int sp[2];
    if (idx < 0 || idx >= c->nlinks || idx == c->index)
        return tether__tcp_protocol_error(ep, c, "a failover of a lane it cannot name");
    tether__link *l = &ep->links[c->peer][idx];
    if (l->lane == TETHER__LANE_TUNNEL)
        return tether__tcp_protocol_error(ep, c, "a failover of a lane already taken out");
    if (l->lane == TETHER__LANE_DIRECT && tether__tcp_lane_down(ep, l, "its peer gave it up") < 0)
        return tether__tcp_break(ep, TETHER_ENET,
                                 "rank %d (%s) gave up link %d, and rank %d has "
                                 "no link left to it",
                                 c->peer, ep->addr[c->peer], idx, ep->rank);
    TRY(tether__tcp_lane_acked(ep, l, pos));
    if (tether__tcp_lane_rewind(l, pos) < 0)
        return tether__tcp_protocol_error(ep, c, "a failover from a position never sent");
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0)
        return tether__tcp_break(ep, TETHER_ENET, "socketpair() for link %d to rank %d: %s", idx,
                                 c->peer, strerror(errno));
    for (int i = 0; i < 2; i++) {
        int sz = TETHER__TUNNEL_BUF;
        fcntl(sp[i], F_SETFL, fcntl(sp[i], F_GETFL) | O_NONBLOCK);
        setsockopt(sp[i], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
        setsockopt(sp[i], SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
#ifdef SO_NOSIGPIPE /* macOS: no MSG_NOSIGNAL (backends/net/socket.h) */
        int one = 1;
        setsockopt(sp[i], SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
    }
    l->fd = sp[0];
    l->pump = sp[1];
    l->lane = TETHER__LANE_TUNNEL;
    l->rx_acked = l->rx_pos - 1; /* the ack that went with the socket: say it again */
    tether__tcp_lane_ack(ep, l);
    if (ep->loop)
        tether__loop_kick(ep->loop);
    TRY(tether__tcp_lane_move(ep, l));
    if (l->newfd >= 0) /* it came back before the peer's failover did */
        return start_switch(ep, l);
    return TETHER_OK;
}

/* ---- a lane that comes back ---- */

/* Both sides switched: l's stream goes on its new socket from pos, which the peer consumed. */
static int finish_switch(tether__tcp_ep *ep, tether__link *l, uint64_t pos)
{
    char at[32], where[2 * TETHER__ADDR_TEXT + 8];
    TRY(tether__tcp_lane_acked(ep, l, pos));
    if (tether__tcp_lane_rewind(l, pos) < 0)
        return tether__tcp_protocol_error(ep, l, "a switch from a position never sent");
    l->fd = l->newfd;
    l->newfd = -1;
    l->lane = TETHER__LANE_DIRECT;
    l->switching = l->peer_switched = 0;
    l->rlen = 0;
    l->held = l->hangup = 0;
    l->seen_at = 0; /* the silence watch starts over */
    l->backs++;
    l->back_sent = l->bytes_sent;
    l->back_recvd = l->bytes_recvd;
    socket_text(ep, l, where, sizeof where);
    tether__net_clock_text(at, sizeof at);
    fprintf(stderr,
            "tether: rank %d: link %d to rank %d (%s) is back at %s; carrying over it again\n",
            ep->rank, l->index, l->peer, where, at);
    l->rx_acked = l->rx_pos - 1; /* acks that went through the tunnel may be lost: say it again */
    tether__tcp_lane_ack(ep, l);
    if (l->txhead && tether__tcp_tx_flush(ep, l) == 0)
        tether__tcp_kick_for_room(ep, l);
    if (ep->loop)
        tether__loop_kick(ep->loop); /* its poll set changed */
    return ep->err;
}

/* Tunnelled lane l has a new socket: leave the tunnel (what is in it now the peer's replay
 * brings again), tell the peer how far this side consumed, and switch once the peer has too. */
static int start_switch(tether__tcp_ep *ep, tether__link *l)
{
    tether__link *c = carrier_for(ep, l);
    if (l->lane != TETHER__LANE_TUNNEL || l->switching || !c)
        return TETHER_OK;       /* no live lane to say it on: the socket waits */
    shutdown(l->fd, SHUT_RDWR); /* wakes a thread asleep in poll() on it */
    close(l->fd);
    close(l->pump);
    l->fd = l->pump = -1;
    free(l->in);
    l->in = NULL;
    l->inlen = l->incap = 0;
    l->rlen = 0;
    l->held = l->hangup = 0;
    drop_uncounted(l);
    l->lane = TETHER__LANE_WAIT;
    l->switching = 1;
    tether__frame f = {.type = TETHER__FRAME_SWITCH, .code = l->index, .len = l->rx_pos};
    queue_header(ep, c, &f);
    if (ep->loop)
        tether__loop_kick(ep->loop);
    if (l->peer_switched)
        return finish_switch(ep, l, l->peer_switch_pos);
    return TETHER_OK;
}

/* The peer's switch frame for lane idx came on c: it consumed pos bytes of it. */
static int switched(tether__tcp_ep *ep, tether__link *c, int idx, uint64_t pos)
{
    if (idx == c->index)
        return tether__tcp_protocol_error(ep, c, "a switch of the lane it came on");
    tether__link *l = &ep->links[c->peer][idx];
    if (l->lane == TETHER__LANE_DIRECT || l->peer_switched)
        return tether__tcp_protocol_error(ep, c, "a switch of a lane not taken out");
    l->peer_switched = 1;
    l->peer_switch_pos = pos;
    if (l->switching)
        return finish_switch(ep, l, pos);
    if (l->newfd >= 0)
        return start_switch(ep, l);
    return TETHER_OK; /* the new socket comes here soon (its thread hands it over) */
}

void tether__tcp_lane_back(tether__tcp_ep *ep, tether__link *l, int fd)
{
    if (ep->err || l->nlinks < 2 || l->eof || l->bye) {
        close(fd);
        return;
    }
    if (l->lane == TETHER__LANE_DIRECT &&
        tether__tcp_lane_down(ep, l, "its peer connected it again") < 0) {
        close(fd);
        return;
    }
    if (l->newfd >= 0) /* an earlier try the peer gave up */
        close(l->newfd);
    l->newfd = fd;
    if (l->lane == TETHER__LANE_TUNNEL)
        start_switch(ep, l);
}

int tether__tcp_lane_frame(tether__tcp_ep *ep, tether__link *l, const tether__frame *f)
{
    int idx = f->code;
    if (l->nlinks < 2 || idx < 0 || idx >= l->nlinks)
        return tether__tcp_protocol_error(ep, l, "a lane frame for a lane it cannot name");
    switch (f->type) {
    case TETHER__FRAME_ACK:
        return tether__tcp_lane_acked(ep, &ep->links[l->peer][idx], f->len);
    case TETHER__FRAME_FAILOVER:
        return failed_over(ep, l, idx, f->len);
    case TETHER__FRAME_SWITCH:
        return switched(ep, l, idx, f->len);
    default: /* TETHER__FRAME_TUNNEL */
        if (f->len == 0 || f->len > TETHER__TUNNEL_CHUNK || idx == l->index)
            return tether__tcp_protocol_error(ep, l, "a malformed tunnel frame");
        if (!(l->cur = tether__rxcache_get(&ep->rxcache, f->len)))
            return tether__tcp_break(ep, TETHER_ENOMEM, "out of memory reading rank %d's tunnel",
                                     l->peer);
        l->rx = TETHER__RX_TUNNEL;
        l->tunnel_of = idx;
        return TETHER_OK;
    }
}

int tether__tcp_lane_tunnelled(tether__tcp_ep *ep, tether__link *l, tether__rxmsg *m)
{
    tether__link *t = &ep->links[l->peer][l->tunnel_of];
    size_t done = 0; /* straight into the socketpair when nothing waits before it */
    if (t->switching || t->lane == TETHER__LANE_DIRECT) { /* sent before the peer's switch frame:
                                                             it sends them again on the socket */
        tether__rxcache_put(&ep->rxcache, m);
        return TETHER_OK;
    }
    if (t->inlen == 0 && t->lane == TETHER__LANE_TUNNEL) {
        ssize_t n = send(t->pump, m->buf, (size_t)m->len, MSG_DONTWAIT | TETHER__SEND_FLAGS);
        done = n > 0 ? (size_t)n : 0;
    }
    if (t->inlen + m->len - done > t->incap) {
        size_t cap = t->incap ? t->incap : TETHER__TUNNEL_CHUNK;
        while (cap < t->inlen + m->len - done)
            cap *= 2;
        unsigned char *in = realloc(t->in, cap);
        if (!in) {
            tether__rxcache_put(&ep->rxcache, m);
            return tether__tcp_break(ep, TETHER_ENOMEM, "out of memory for rank %d's tunnel",
                                     l->peer);
        }
        t->in = in;
        t->incap = cap;
    }
    if (done < m->len) { /* t->in may still be NULL when the socketpair took it all */
        memcpy(t->in + t->inlen, m->buf + done, (size_t)m->len - done);
        t->inlen += (size_t)m->len - done;
    }
    tether__rxcache_put(&ep->rxcache, m);
    feed(t);
    return TETHER_OK;
}

void tether__tcp_lane_watch(tether__tcp_ep *ep, int64_t now_ms)
{
    int64_t silent = (int64_t)ep->beat_ms * 3 / 2;
    for (int p = 0; p < ep->size && ep->beat_ms && !ep->err; p++) {
        if (ep->nlinks[p] < 2)
            continue;
        tether__link *lanes = ep->links[p];
        int64_t heard = 0; /* the latest any direct lane of the pair carried a byte */
        for (int k = 0; k < ep->nlinks[p]; k++) {
            tether__link *l = &lanes[k];
            size_t in = 0, out = 0;
            if (l->lane != TETHER__LANE_DIRECT || l->fd < 0 || l->eof || l->bye)
                continue;
            tether__net_queued(l->fd, &in, &out);
            /* bytes waiting unread: this side is not reading, the peer may not be able to write */
            if (l->bytes_recvd + in != l->seen_bytes || in > 0 || !l->seen_at) {
                l->seen_bytes = l->bytes_recvd + in;
                l->seen_at = now_ms;
            }
            heard = l->seen_at > heard ? l->seen_at : heard;
        }
        for (int k = 0; k < ep->nlinks[p] && !ep->err; k++) {
            tether__link *l = &lanes[k];
            char why[96];
            if (l->lane != TETHER__LANE_DIRECT || l->fd < 0 || l->eof || l->bye ||
                now_ms - l->seen_at < silent || now_ms - heard >= silent)
                continue;
            snprintf(why, sizeof why, "no byte for %lld ms while another link carried",
                     (long long)(now_ms - l->seen_at));
            tether__tcp_lane_down(ep, l, why);
        }
    }
}
