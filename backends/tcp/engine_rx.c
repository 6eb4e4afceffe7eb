/* backends/tcp/engine_rx.c - the receive side of the engine: reading frames and matching them. */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "backends/net/socket.h"
#include "engine_break.h"
#include "engine_core.h"
#include "engine_impl.h"
#include "engine_lane.h"
#include "engine_rx.h"
#include "engine_shm.h"

/* Both sides of a disagreement, in the words of transport.h. */
int tether__tcp_mismatch(tether__tcp_ep *ep, const tether__link *l, tether__tag got_tag,
                         uint64_t got_len, tether__tag want, uint64_t want_len)
{
    return tether__tcp_break(
        ep, TETHER_EMISMATCH,
        "rank %d (%s) sent %llu bytes with signature %08x for group %08x seq %08x step %u, "
        "but rank %d expects %llu bytes with signature %08x (step %u): the ranks called "
        "different collectives or with different counts, dtypes, ops or roots, in this call or "
        "(a collective's signature chains its group's earlier ones) an earlier collective",
        l->peer, ep->addr[l->peer], (unsigned long long)got_len, got_tag.sig, got_tag.group,
        got_tag.seq, got_tag.step, ep->rank, (unsigned long long)want_len, want.sig, want.step);
}

void tether__tcp_track(tether__ep *tep, tether__passed *p)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
    pthread_mutex_lock(&ep->mu);
    ep->passed = p;
    pthread_mutex_unlock(&ep->mu);
}

int tether__tcp_stale(tether__tcp_ep *ep, const tether__link *l, tether__tag tag)
{
    char why[TETHER__ERRMSG_MAX];
    if (!tether__passed_stale(ep->passed, tag, l->peer, why, sizeof why))
        return TETHER_OK;
    return tether__tcp_break(ep, TETHER_EMISMATCH, "%s", why);
}

/* Something may wait unread on l: anything but a ring with nothing in it or read from it (its
 * socket then holds only doorbells; its end is the liveness checks' to see). */
static int may_hold(const tether__link *l)
{
    return l->fd >= 0 && !l->eof &&
           (!l->shm_rx || l->rlen || l->cur || tether__shm_unread(l->shm) > 0);
}

int tether__tcp_sweep_stale(tether__tcp_ep *ep)
{
    char why[TETHER__ERRMSG_MAX];
    tether__passed_action look = tether__passed_look(ep->passed, &ep->seen, ep->recvs);
    if (look == TETHER__PASSED_NONE)
        return TETHER_OK;
    for (int i = 0; look == TETHER__PASSED_DRAIN && i < ep->nflat && !ep->err; i++)
        if (may_hold(ep->flat[i]))
            TRY(tether__tcp_read(ep, ep->flat[i], 1)); /* an abort there breaks ep */
    for (int i = 0; i < ep->nflat + ep->nvirt; i++)
        if (tether__rxq_stale(&ep->flat[i]->unexpected, ep->passed, ep->flat[i]->peer, why,
                              sizeof why))
            return tether__tcp_break(ep, TETHER_EMISMATCH, "%s", why);
    return TETHER_OK;
}

int tether__tcp_too_long(tether__tcp_ep *ep, const tether__link *l, uint64_t len, tether__tag tag)
{
    return tether__tcp_break(ep, TETHER_ENET,
                             "rank %d (%s) announced a message of %llu bytes that no receive has "
                             "asked for; this rank buffers at most %llu (%s): a corrupt frame, "
                             "or something else writing to this port",
                             l->peer, ep->addr[l->peer], (unsigned long long)len,
                             (unsigned long long)tether__rxcache_limit(&ep->rxcache, tag),
                             tag.seq & TETHER__TAG_P2P
                                 ? "half this machine's memory, for a send"
                                 : "twice its largest message, at least 1 GiB");
}

/* m, a routed chunk passing through that came on link from, is read: queue it on towards its
 * destination (route.h says which way), counted against the onward link's TETHER__PASS_MAX. */
static int pass_on(tether__tcp_ep *ep, const tether__link *from, tether__rxmsg *m)
{
    tether__fwd *fw = (tether__fwd *)((char *)m - offsetof(tether__fwd, rx));
    tether__frame f;
    tether__frame_decode(fw->tx.hdr, &f);
    int src = tether__route_src(f.code), dst = tether__route_dst(f.code);
    int next = tether__route_onward(&ep->routes, from->peer, dst);
    tether__link *l = next < 0 ? NULL : &ep->links[next][0];
    if (!l || l->eof) {
        free(fw);
        return tether__tcp_break(ep, TETHER_EPEER,
                                 "rank %d cannot pass on a message from rank %d to rank %d: %s",
                                 ep->rank, src, dst,
                                 l ? "the next rank on the way has left the ring"
                                   : "it came from the way it should go (ranks disagree "
                                     "on the ring: check the hostfiles are the same)");
    }
    if (!l->passing)
        l->passing_at = tether__net_now_ms();
    l->passing += fw->tx.len;
    fw->tx.passing = 1;
    return tether__tcp_tx_queue(ep, l, &fw->tx);
}

uint64_t tether__tcp_payload_left(const tether__link *l)
{
    return (l->rx == TETHER__RX_CHUNK ? l->chunk_end : l->cur->len) - l->cur->got;
}

/* The payload of l->cur is complete. */
static int rx_done(tether__tcp_ep *ep, tether__link *l)
{
    tether__rxmsg *m = l->cur;
    tether__rx_state was = l->rx;
    l->cur = NULL;
    l->rx = TETHER__RX_HEADER;
    switch (was) {
    case TETHER__RX_MEMORY: {
        tether__cma_todo t = {.fail = TETHER__CMA_OK};
        tether__cma_at at = tether__tcp_cma_at(ep, l);
        tether__cma_rx_done(&l->cma, &ep->links[l->peer][0].cma, &at, &l->posted, &l->unexpected,
                            &t);
        return tether__tcp_apply(ep, l, &t);
    }
    case TETHER__RX_PASSING:
        return pass_on(ep, l, m);
    case TETHER__RX_CHUNK:
        if (m->got < m->len) /* more chunks follow: the origin's link keeps the message */
            return TETHER_OK;
        l->chunk_of->joining = NULL;
        break;
    case TETHER__RX_BEAT: {
        char why[TETHER__ERRMSG_MAX];
        int bad = ep->records.ws && tether__ws_merge(ep->records.ws, l->peer, m->buf,
                                                     (size_t)m->len, why, sizeof why) < 0;
        tether__rxcache_put(&ep->rxcache, m);
        return bad ? tether__tcp_protocol_error(ep, l, why) : TETHER_OK;
    }
    case TETHER__RX_TUNNEL:
        return tether__tcp_lane_tunnelled(ep, l, m);
    case TETHER__RX_ABORT: {
        m->buf[m->len] = '\0';
        /* a mismatch is the same on every rank; any other failure is this peer's */
        int code = tether__net_reported(l->abort_code);
        int rc = tether__tcp_break(ep, code, "rank %d reported: %s", l->peer, (char *)m->buf);
        tether__rxcache_put(&ep->rxcache, m);
        return rc;
    }
    case TETHER__RX_DATA:
    case TETHER__RX_HEADER:
        break;
    }
    if (m->req) {
        tether__tcp_part_done(ep, m->req);
        if (m->heap) /* an unexpected frame claimed while it was still being read */
            tether__rxcache_put(&ep->rxcache, m);
    }
    return TETHER_OK;
}

/* A frame whose payload the link reads for itself: an abort's reason, a heartbeat's records. */
static int start_own(tether__tcp_ep *ep, tether__link *l, const tether__frame *f)
{
    int beat = f->type == TETHER__FRAME_HEARTBEAT;
    if (f->len > (beat ? TETHER__WS_BLOB_MAX : TETHER__ABORT_TEXT_MAX))
        return tether__tcp_protocol_error(ep, l,
                                          beat ? "heartbeat too long" : "abort reason too long");
    l->cur = tether__rxcache_get(&ep->rxcache, f->len);
    if (!l->cur)
        return tether__tcp_break(ep, TETHER_ENOMEM, "out of memory reading rank %d's %s frame",
                                 l->peer, beat ? "heartbeat" : "abort");
    l->rx = beat ? TETHER__RX_BEAT : TETHER__RX_ABORT;
    l->abort_code = f->code;
    return TETHER_OK;
}

/* The peer closes normally: fine unless a receive still waits for it. */
static int rx_bye(tether__tcp_ep *ep, tether__link *l)
{
    l->bye = 1;
    if (tether__cma_sending(&l->cma))
        return tether__tcp_gone(ep, l, "waits for it to read a message from this rank's memory");
    return l->posted.head ? tether__tcp_gone(ep, l, "expects a message from it") : TETHER_OK;
}

/* A data frame of n bytes arrived for the receives of q (its link, or the queue-only link of the
 * rank a routed message comes from): *m is its posted receive, or a block keeping it unexpected. */
static int rx_match(tether__tcp_ep *ep, tether__link *q, const tether__frame *f, uint64_t n,
                    tether__rxmsg **out)
{
    tether__rxmsg *m;
    switch (tether__rxq_match(&q->posted, f->tag, f->len, &m)) {
    case TETHER__MATCH_OK:
        break;
    case TETHER__MATCH_NONE:
        TRY(tether__tcp_stale(ep, q, f->tag));
        if (!tether__rxcache_admits(&ep->rxcache, f->len, f->tag))
            return tether__tcp_too_long(ep, q, f->len, f->tag);
        m = tether__rxcache_get_lazy(&ep->rxcache, n);
        if (!m)
            return tether__tcp_break(ep, TETHER_ENOMEM,
                                     "out of memory buffering %llu bytes from rank %d",
                                     (unsigned long long)n, q->peer);
        m->tag = f->tag;
        m->msglen = f->len;
        tether__rxq_push(&q->unexpected, m);
        ep->events++; /* an any-source receive may claim it now (tether__tcp_probe) */
        break;
    case TETHER__MATCH_SIG:
    case TETHER__MATCH_LEN:
        return tether__tcp_mismatch(ep, q, f->tag, f->len, m->tag, m->msglen);
    }
    *out = m;
    return TETHER_OK;
}

/* A routed chunk for another rank: read it into a block of its own (tether__fwd), passed on once
 * read (pass_on). The message's length is checked as the destination will. */
static int take_passing(tether__tcp_ep *ep, tether__link *l, const tether__frame *f)
{
    uint64_t n = f->len;
    if (f->type == TETHER__FRAME_ROUTED_MORE && (n == 0 || n > TETHER__ROUTE_CHUNK))
        return tether__tcp_protocol_error(ep, l, "a routed chunk longer than a chunk, or empty");
    if (f->type == TETHER__FRAME_ROUTED) {
        if (!tether__rxcache_admits(&ep->rxcache, f->len, f->tag))
            return tether__tcp_too_long(ep, l, f->len, f->tag);
        n = tether__route_first(f->len);
    }
    tether__fwd *fw = malloc(sizeof *fw + (size_t)n);
    if (!fw)
        return tether__tcp_break(ep, TETHER_ENOMEM,
                                 "rank %d: out of memory passing on %llu bytes from rank %d to "
                                 "rank %d",
                                 ep->rank, (unsigned long long)f->len, tether__route_src(f->code),
                                 tether__route_dst(f->code));
    memset(fw, 0, sizeof *fw);
    tether__frame_encode(f, fw->tx.hdr); /* unchanged: type, origin, destination, tag, length */
    fw->tx.payload = (const unsigned char *)(fw + 1);
    fw->tx.len = n;
    fw->rx = (tether__rxmsg){
        .tag = f->tag, .msglen = f->len, .len = n, .buf = (unsigned char *)(fw + 1)};
    l->cur = &fw->rx;
    l->rx = TETHER__RX_PASSING;
    return TETHER_OK;
}

static int same_tag(tether__tag a, tether__tag b)
{
    return a.group == b.group && a.seq == b.seq && a.step == b.step && a.sig == b.sig;
}

/* A routed chunk for this rank, of the message from the origin whose queue-only link is q: the
 * first is matched as if the origin had sent the message straight here, each next one joins it. */
static int join_chunk(tether__tcp_ep *ep, tether__link *l, tether__link *q, const tether__frame *f)
{
    tether__rxmsg *m = q->joining;
    if (f->type == TETHER__FRAME_ROUTED) {
        if (m)
            return tether__tcp_protocol_error(ep, l, "a routed message begun inside another");
        TRY(rx_match(ep, q, f, f->len, &m));
        q->joining = m;
    } else if (!m || !same_tag(m->tag, f->tag) || !tether__route_next_ok(m->len, m->got, f->len)) {
        return tether__tcp_protocol_error(ep, l, "a routed chunk that continues no message");
    }
    l->cur = m;
    l->rx = TETHER__RX_CHUNK;
    l->chunk_of = q;
    l->chunk_end =
        m->got + (f->type == TETHER__FRAME_ROUTED ? tether__route_first(f->len) : f->len);
    return TETHER_OK;
}

/* A routed chunk: for this rank it joins its message; for another it is passed on. */
static int rx_routed(tether__tcp_ep *ep, tether__link *l, const tether__frame *f)
{
    switch (tether__route_arrived(&ep->routes, f->code, l->index)) {
    case TETHER__ROUTE_HERE:
        break;
    case TETHER__ROUTE_PASS:
        return take_passing(ep, l, f);
    case TETHER__ROUTE_MISPLACED:
        return tether__tcp_protocol_error(ep, l, "a routed frame this rank cannot place");
    case TETHER__ROUTE_LINKED:
        return tether__tcp_protocol_error(ep, l, "a routed frame from a rank linked to this one");
    }
    return join_chunk(ep, l, &ep->links[tether__route_src(f->code)][0], f);
}

int tether__tcp_queue_leave(tether__tcp_ep *ep, int to, int origin)
{
    tether__frame f = {.type = TETHER__FRAME_LEAVE, .code = origin};
    return ep->links[to][0].eof ? TETHER_OK
                                : tether__tcp_tx_owned(ep, &ep->links[to][0], &f, NULL, 0);
}

/* A leave notice (route.h): count it and pass it on. The one that comes the way its origin's
 * messages to this rank come (its own link, or for a routed origin the neighbour they pass: a
 * pair's two directions share one path, hop.h) follows every frame of them: from then on a receive
 * from the origin that has not met its message never will (its bye may come only once every rank
 * has closed). */
static int rx_leave(tether__tcp_ep *ep, tether__link *l, const tether__frame *f)
{
    if (f->len != 0 || tether__route_left(&ep->routes, f->code) < 0)
        return tether__tcp_protocol_error(ep, l, "a malformed leave notice");
    tether__link *q = &ep->links[f->code][0];
    if (tether__route_hop(&ep->routes, f->code) == l->peer) {
        q->left = 1;
        if (q->posted.head)
            return tether__tcp_gone(ep, q, "expects a message from it");
    }
    ep->events++;
    for (int p = -1; (p = tether__route_leave_next(&ep->routes, l->peer, f->code, p)) >= 0;)
        TRY(tether__tcp_queue_leave(ep, p, f->code));
    return TETHER_OK;
}

/* A CMA frame's header (cma.h): the memory path says what follows. */
static int rx_memory(tether__tcp_ep *ep, tether__link *l, const tether__frame *f)
{
    tether__cma_todo t = {.fail = TETHER__CMA_OK};
    tether__cma_at at = tether__tcp_cma_at(ep, l);
    tether__rxmsg *m = tether__cma_rx_start(&l->cma, &ep->links[l->peer][0].cma, &at, f, &t);
    TRY(tether__tcp_apply(ep, l, &t));
    if (m) {
        l->cur = m;
        l->rx = TETHER__RX_MEMORY;
    }
    return TETHER_OK;
}

/* A shared-ring offer or switch frame (engine_shm.c): answer it, or switch our side too. */
static int rx_shm(tether__tcp_ep *ep, tether__link *l, const tether__frame *f)
{
    const char *bad;
    tether__shm_step step = tether__tcp_shm_frame(ep, l, f, &bad);
    if (step == TETHER__SHM_BAD)
        return tether__tcp_protocol_error(ep, l, bad);
    if (step == TETHER__SHM_NOTHING)
        return TETHER_OK;
    tether__txmsg *t = calloc(1, sizeof *t);
    if (!t)
        return tether__tcp_break(ep, TETHER_ENOMEM, "out of memory for a frame to rank %d",
                                 l->peer);
    tether__frame on = {.type = TETHER__FRAME_SHM_ON, .code = step == TETHER__SHM_SWITCH};
    tether__frame_encode(&on, t->hdr);
    t->shm_switch = step == TETHER__SHM_SWITCH; /* the last frame on the socket */
    return tether__tcp_tx_queue(ep, l, t);
}

/* The peer's word on its rings (engine_wait.c's opening): once, a header alone. */
static int rx_rings_all(tether__tcp_ep *ep, tether__link *l, const tether__frame *f)
{
    if (l->rings_seen >= 0 || (f->code != 0 && f->code != 1) || f->len)
        return tether__tcp_protocol_error(ep, l, "a word on the shared rings out of turn");
    l->rings_seen = f->code;
    l->rings_due = 0;
    return TETHER_OK;
}

/* A header arrived: find its receive or keep it as unexpected. */
static int rx_start(tether__tcp_ep *ep, tether__link *l, const tether__frame *f)
{
    uint64_t off, n;
    if (f->type == TETHER__FRAME_BYE)
        return rx_bye(ep, l);
    if (f->type == TETHER__FRAME_LEAVE)
        return rx_leave(ep, l, f);
    if ((f->type == TETHER__FRAME_HEARTBEAT && f->len == 0) /* its bytes were the news */)
        return TETHER_OK;
    if (f->type == TETHER__FRAME_ACK || f->type == TETHER__FRAME_FAILOVER ||
        f->type == TETHER__FRAME_SWITCH)
        return tether__tcp_lane_frame(ep, l, f);
    if (f->type == TETHER__FRAME_SHM_OFFER || f->type == TETHER__FRAME_SHM_ON)
        return rx_shm(ep, l, f);
    if (f->type == TETHER__FRAME_RINGS_ALL)
        return rx_rings_all(ep, l, f);
    if (f->type == TETHER__FRAME_ABORT || f->type == TETHER__FRAME_HEARTBEAT) {
        TRY(start_own(ep, l, f));
    } else if (f->type == TETHER__FRAME_ROUTED || f->type == TETHER__FRAME_ROUTED_MORE) {
        TRY(rx_routed(ep, l, f));
    } else if (f->type == TETHER__FRAME_TUNNEL) {
        TRY(tether__tcp_lane_frame(ep, l, f));
    } else if (tether__frame_is_cma(f->type)) {
        TRY(rx_memory(ep, l, f));
        if (!l->cur) /* an answer or a read notice: a header alone */
            return TETHER_OK;
    } else if (!tether__stripe(f->len, l->nlinks, l->index, &off, &n)) {
        return tether__tcp_protocol_error(ep, l, "a frame on a link its length does not use");
    } else {
        TRY(rx_match(ep, l, f, n, &l->cur));
        l->rx = TETHER__RX_DATA;
    }
    return tether__tcp_payload_left(l) == 0 ? rx_done(ep, l) : TETHER_OK;
}

/* Read only the next header, not an rbuf-full, when the receive posted first on l (the frame
 * coming is most likely its) brings at least an rbuf-full through the socket: its payload then
 * goes straight into place, where reading ahead would copy its first 64 KiB twice, through rbuf.
 * One recv more per such message; a guess only, so any frame that comes is handled as before. A
 * message the peer describes for us to read from its memory (cma.h) brings a descriptor only.
 * (measured: docs/perf/notes.md, backends/tcp/engine_rx.c) */
static int header_first(const tether__tcp_ep *ep, const tether__link *l)
{
    const tether__rxmsg *next = l->posted.head;
    if (l->rlen >= TETHER__FRAME_SIZE || !next || next->len - next->got < TETHER__RBUF_SIZE)
        return 0;
    const tether__link *l0 = &ep->links[l->peer][0];
    uint64_t min = tether__tcp_read_min(ep, l0->shm_rx, next->tag); /* as the peer picks, likely */
    return !(l0->cma.read && min && next->msglen >= min);
}

/* Whether a receive wants l's bytes: the rule of tether__tcp_read's all = 0. */
static int wants_input(const tether__link *l)
{
    return l->cur != NULL || l->posted.head != NULL || tether__cma_wants_input(&l->cma) ||
           l->awaiting || l->carrier || /* acks, and other lanes' tunnels (engine_lane.c) */
           l->shm_due || (l->shm && !l->shm_rx) || /* the rings' exchange (engine_shm.c) */
           l->rings_due;
}

/* A message l's peer sends, kept while it arrives, outgrew this rank's memory. */
static int out_of_memory(tether__tcp_ep *ep, const tether__link *l, const tether__rxmsg *m)
{
    return tether__tcp_break(ep, TETHER_ENOMEM,
                             "out of memory buffering %llu bytes of a %llu-byte message from "
                             "rank %d that no receive has asked for yet",
                             (unsigned long long)m->got, (unsigned long long)m->len, l->peer);
}

/* Bytes of l's stream were consumed (engine_lane.c): ack what asks for it. A lane taken out
 * meanwhile (a write that failed) dropped its read-ahead: stop parsing it. */
static int lane_consumed(tether__tcp_ep *ep, tether__link *l)
{
    tether__tcp_lane_consumed(ep, l);
    return ep->err ? ep->err : l->fd < 0;
}

/* Consume the bytes held in rbuf: payload of the current frame, then whole headers. With all = 0
 * it stops before a header while no receive is posted on l: the frames behind stay in rbuf, as
 * they would in the socket, until a receive wants them (read-ahead must not turn into reading
 * every frame the peer sends as unexpected, one rbuf at a time). On failure the break has emptied
 * the link already, so return at once. */
static int parse(tether__tcp_ep *ep, tether__link *l, int all)
{
    size_t pos = 0;
    int rc;
    while (pos < l->rlen && (all || wants_input(l))) {
        tether__rxmsg *m = l->cur;
        if (m) {
            uint64_t left = tether__tcp_payload_left(l);
            uint64_t k = l->rlen - pos < left ? l->rlen - pos : left;
            if (tether__rxmsg_reserve(m, &k) < 0)
                return out_of_memory(ep, l, m);
            memcpy(m->buf + m->got, l->rbuf + pos, (size_t)k);
            m->got += k;
            l->payload_recvd += l->rx != TETHER__RX_BEAT ? k : 0;
            l->rx_pos += l->rx != TETHER__RX_BEAT ? k : 0;
            pos += k;
            if (k == left)
                TRY(rx_done(ep, l));
            if (l->nlinks > 1 && (rc = lane_consumed(ep, l)) != 0)
                return rc < 0 ? rc : TETHER_OK;
            continue;
        }
        if (l->rlen - pos < TETHER__FRAME_SIZE)
            break;
        tether__frame f;
        if (tether__frame_decode(l->rbuf + pos, &f) < 0)
            return tether__tcp_protocol_error(ep, l, "unknown frame type");
        pos += TETHER__FRAME_SIZE;
        if (f.type != TETHER__FRAME_HEARTBEAT && f.type != TETHER__FRAME_ACK)
            l->rx_pos += TETHER__FRAME_SIZE; /* the lane's stream (engine_lane.c) */
        TRY(rx_start(ep, l, &f));
        if (l->shm_drop) { /* the peer's switch frame: the rest are doorbells (engine_shm.c) */
            l->shm_drop = 0;
            pos = l->rlen;
            break;
        }
        if (l->nlinks > 1 && l->cur && l->rx != TETHER__RX_BEAT &&
            tether__tcp_payload_left(l) > TETHER__LANE_COPY_MAX)
            l->ack_due = l->rx_pos + tether__tcp_payload_left(l); /* its sender waits for it */
        if (l->nlinks > 1 && (rc = lane_consumed(ep, l)) != 0)
            return rc < 0 ? rc : TETHER_OK;
    }
    memmove(l->rbuf, l->rbuf + pos, l->rlen - pos);
    l->rlen -= pos;
    return TETHER_OK;
}

/* l's peer is gone. It may have left only because of a failure another rank reported to every
 * rank (a mismatch, an abort): read what the other links hold first, so that report, when it came
 * before, is the error rather than the exit it caused. */
static void read_others_first(tether__tcp_ep *ep, const tether__link *l)
{
    static _Thread_local int reading; /* the reads below may meet another exit: no recursion */
    if (reading)
        return;
    reading = 1;
    for (int i = 0; i < ep->nflat && !ep->err; i++)
        if (ep->flat[i] != l && ep->flat[i]->fd >= 0 && !ep->flat[i]->eof)
            tether__tcp_read(ep, ep->flat[i], 1);
    reading = 0;
}

/* how: "" for an orderly end of stream, " (reset)" when the peer's socket closed with bytes it
 * had not read (often a heartbeat) */
static int peer_closed(tether__tcp_ep *ep, tether__link *l, const char *how)
{
    if (tether__tcp_lane_down(ep, l, *how ? "its connection was reset" : "its connection closed") ==
        0)
        return TETHER_OK; /* another link to the peer carries on (engine_lane.c) */
    read_others_first(ep, l);
    return tether__tcp_break(ep, TETHER_EPEER,
                             "rank %d (%s) closed the connection%s; it probably exited, "
                             "see its output",
                             l->peer, ep->addr[l->peer], how);
}

/* POLLRDHUP (Linux): the peer shut its side down, reported even while unread bytes wait. */
#ifdef POLLRDHUP
#define HANGUP_EVENTS (POLLHUP | POLLERR | POLLRDHUP)
#else
#define HANGUP_EVENTS (POLLHUP | POLLERR)
#endif

/* What poll() watches on l: input when in, room when frames wait, and (Linux) the peer's exit. */
static short events(const tether__link *l, int in)
{
    short ev = l->shm ? tether__tcp_shm_events(l, in)
                      : (short)((in ? POLLIN : 0) | (l->txhead ? POLLOUT : 0));
#ifdef POLLRDHUP
    ev |= POLLRDHUP;
#endif
    return ev;
}

short tether__tcp_poll_events(const tether__link *l)
{
    return events(l, wants_input(l) || !l->held);
}

/* tether__tcp_input_ready and tether__tcp_opening_input: with opening set, a hang-up reads only
 * what a receive or the exchange wants, not the whole stream. */
static int input(tether__tcp_ep *ep, tether__link *l, short revents, int opening)
{
    if (l->shm_rx) { /* the socket holds doorbells, or its end */
        tether__tcp_shm_bells(l);
        if (l->sock_eof || wants_input(l))
            return tether__tcp_read(ep, l, l->sock_eof && !opening);
        l->held = tether__shm_unread(l->shm) > 0;
        return TETHER_OK;
    }
    if ((revents & HANGUP_EVENTS) && !opening)
        return tether__tcp_read(ep, l, 1); /* what is left, then the end of the stream */
    if (!(revents & POLLIN) || wants_input(l))
        return tether__tcp_read(ep, l, 0);
    char c;
    ssize_t n = recv(l->fd, &c, 1, MSG_PEEK);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        return tether__tcp_read(ep, l, 1); /* closed or failed: let the read report it */
    l->held = n > 0;
    return TETHER_OK;
}

int tether__tcp_input_ready(tether__tcp_ep *ep, tether__link *l, short revents)
{
    return input(ep, l, revents, 0);
}

int tether__tcp_opening_input(tether__tcp_ep *ep, tether__link *l, short revents)
{
    return input(ep, l, revents, 1);
}

/* The onward link o has held TETHER__PASS_MAX and its extra without taking a byte for
 * TETHER__PASS_STALL_MS: let it hold one chunk more (engine_impl.h). 1 if granted. */
static int stall_grant(tether__link *o)
{
    int64_t now = tether__net_now_ms();
    if (now - o->passing_at < TETHER__PASS_STALL_MS)
        return 0;
    o->pass_extra += TETHER__ROUTE_CHUNK;
    o->passing_at = now;
    return 1;
}

/* 1 while l's bytes must wait for the chunks queued onward to leave (TETHER__PASS_MAX). Only link
 * 0 of a neighbour carries routed frames, and they go on to another neighbour's link 0. */
static int held_back(tether__tcp_ep *ep, const tether__link *l)
{
    if (!ep->routes.via || l->index != 0 || l->hangup)
        return 0;
    for (int p = 0; p < ep->size; p++) {
        tether__link *o = ep->nlinks[p] > 0 && p != l->peer ? &ep->links[p][0] : NULL;
        if (o && o->passing >= TETHER__PASS_MAX + o->pass_extra && !stall_grant(o))
            return 1;
    }
    return 0;
}

_Thread_local int tether__tcp_loop_thread; /* set by engine_wait.c's progress-thread handlers */

/* Payload of unexpected messages the endpoint holds, in every link's queue (queue-only ones too).
 */
static uint64_t unexpected_held(const tether__tcp_ep *ep)
{
    uint64_t n = 0;
    for (int i = 0; i < ep->nflat + ep->nvirt; i++)
        for (const tether__rxmsg *m = ep->flat[i]->unexpected.head; m; m = m->next)
            n += m->cma ? 0 : m->got;
    return n;
}

/* Bytes l may read now: on the progress thread, which reads while the program is away, what the
 * endpoint may still hold of unexpected messages under TETHER__UNEXPECTED_EAGER (engine_impl.h)
 * while l is between frames or inside such a message, 0 to stop; UINT64_MAX otherwise (the
 * program's threads, a frame for a posted receive or passing through, a peer that hung up). */
static uint64_t unexpected_room(const tether__tcp_ep *ep, const tether__link *l)
{
    const tether__rxmsg *m = l->cur;
    if (!tether__tcp_loop_thread || l->hangup ||
        (m &&
         (m->req || !m->heap || m->cma || (l->rx != TETHER__RX_DATA && l->rx != TETHER__RX_CHUNK))))
        return UINT64_MAX;
    uint64_t held = unexpected_held(ep);
    return held < TETHER__UNEXPECTED_EAGER ? TETHER__UNEXPECTED_EAGER - held : 0;
}

short tether__tcp_loop_events(tether__tcp_ep *ep, const tether__link *l)
{
    return events(l, !held_back(ep, l) && unexpected_room(ep, l) > 0);
}

void tether__tcp_loop_input(tether__tcp_ep *ep, tether__link *l, short revents)
{
    if (l->shm_rx && revents) {
        tether__tcp_shm_bells(l);
        l->hangup |= l->sock_eof;
        tether__tcp_read(ep, l, 1);
        return;
    }
    if (revents & HANGUP_EVENTS)
        l->hangup = 1;
    if (revents & (POLLIN | HANGUP_EVENTS))
        tether__tcp_read(ep, l, 1);
}

static int read_socket(tether__tcp_ep *ep, tether__link *l, int all)
{
    all |= ep->loop != NULL; /* a progress thread passes routed frames on: it must see them all */
    uint64_t room;
    int rc;
    while (!ep->err && !l->eof && l->fd >= 0 && (all || wants_input(l)) && !held_back(ep, l) &&
           (room = unexpected_room(ep, l)) > 0) {
        if (l->rlen >= TETHER__FRAME_SIZE && !l->cur) { /* frames parse() left for a receive */
            size_t before = l->rlen;
            TRY(parse(ep, l, all));
            if (l->rlen != before)
                continue;
        }
        tether__rxmsg *m = l->cur;
        unsigned char *dst;
        size_t want;
        if (m && l->rlen == 0 && tether__tcp_payload_left(l) >= TETHER__DIRECT_MIN) {
            uint64_t left = tether__tcp_payload_left(l);
            uint64_t fits = left < ep->max_io ? left : ep->max_io;
            if (tether__rxmsg_reserve(m, &fits) < 0)
                return out_of_memory(ep, l, m);
            want = (size_t)fits;
            dst = m->buf + m->got; /* straight into the destination: no copy */
        } else {
            dst = l->rbuf + l->rlen;
            want = TETHER__RBUF_SIZE - l->rlen;
            if (!m && header_first(ep, l))
                want = TETHER__FRAME_SIZE - l->rlen;
        }
        if (want > room)
            want = (size_t)room;
        ssize_t n = l->shm_rx ? tether__tcp_shm_recv(l, dst, want) : recv(l->fd, dst, want, 0);
        if ((n == 0 || (n < 0 && errno == ECONNRESET)) && l->bye) {
            l->eof = 1; /* after its bye, the peer's close is expected */
            return TETHER_OK;
        }
        if (n == 0)
            return peer_closed(ep, l, "");
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                l->held = 0; /* drained */
                return TETHER_OK;
            }
            if (errno == EINTR)
                continue;
            int e = errno;
            if (e == EPROTO && l->shm_rx)
                return tether__tcp_protocol_error(ep, l, "the shared ring's indices");
            if (e == ECONNRESET)
                return peer_closed(ep, l, " (reset)");
            if (tether__tcp_lane_down(ep, l, strerror(e)) == 0)
                return TETHER_OK;
            return tether__tcp_break(ep, TETHER_ENET, "recv() from rank %d (%s): %s", l->peer,
                                     ep->addr[l->peer], strerror(e));
        }
        l->bytes_recvd += (uint64_t)n;
        if (dst == l->rbuf + l->rlen) {
            l->rlen += (size_t)n;
            TRY(parse(ep, l, all));
        } else {
            m->got += (uint64_t)n;
            l->payload_recvd += l->rx != TETHER__RX_BEAT ? (uint64_t)n : 0;
            l->rx_pos += l->rx != TETHER__RX_BEAT ? (uint64_t)n : 0;
            if (tether__tcp_payload_left(l) == 0)
                TRY(rx_done(ep, l));
            if (l->nlinks > 1 && (rc = lane_consumed(ep, l)) != 0)
                return rc < 0 ? rc : TETHER_OK;
        }
        if ((size_t)n < want) { /* the socket had less than we asked for: it is drained */
            l->held = 0;
            return TETHER_OK;
        }
    }
    return ep->err;
}

int tether__tcp_read(tether__tcp_ep *ep, tether__link *l, int all)
{
    if (l->fd < 0) /* a lane taken out, waiting for its peer's position (engine_lane.c) */
        return ep->err;
    int rc = read_socket(ep, l, all);
    if (rc == 0 && l->nlinks > 1) /* room in its socketpair, or tunnel frames for another lane */
        rc = tether__tcp_lane_move(ep, l);
    return rc;
}

/* memcpy of n bytes with ep->mu held, in TETHER__BUSY_STEP parts with the heartbeats' stand-in
 * between them. */
static void copy_standing_in(tether__tcp_ep *ep, void *dst, const void *src, uint64_t n)
{
    for (uint64_t done = 0; done < n; done += TETHER__BUSY_STEP) {
        if (done && ep->stand_in)
            ep->stand_in(ep);
        uint64_t k = n - done < TETHER__BUSY_STEP ? n - done : TETHER__BUSY_STEP;
        memcpy((char *)dst + done, (const char *)src + done, (size_t)k);
    }
}

int tether__tcp_post_recv(tether__tcp_ep *ep, tether__link *l, struct tether__req *r,
                          tether__rxmsg *part)
{
    tether__rxmsg *m;
    switch (tether__rxq_match(&l->unexpected, part->tag, part->msglen, &m)) {
    case TETHER__MATCH_NONE:
        if (l->bye || l->left)
            return tether__tcp_gone(ep, l, "expects a message from it");
        tether__rxq_push(&l->posted, part);
        return TETHER_OK;
    case TETHER__MATCH_SIG:
    case TETHER__MATCH_LEN:
        return tether__tcp_mismatch(ep, l, m->tag, m->msglen, part->tag, part->msglen);
    case TETHER__MATCH_OK:
        break;
    }
    if (m->cma) { /* still in the sender's memory */
        tether__cma_todo t = {.fail = TETHER__CMA_OK};
        tether__cma_at at = tether__tcp_cma_at(ep, l);
        tether__cma_claim(&l->cma, &ep->links[l->peer][0].cma, &at, part, m, &t);
        return tether__tcp_apply(ep, l, &t);
    }
    copy_standing_in(ep, part->buf, m->buf, m->got); /* gigabytes, when the receive came late */
    if (m->got == m->len) {
        tether__rxcache_put(&ep->rxcache, m);
        tether__tcp_part_done(ep, r);
    } else { /* still arriving: the rest goes straight to the user's buffer */
        tether__rxmsg_redirect(m, part->buf);
        m->req = r;
    }
    return TETHER_OK;
}

/* Has the next message of a tag from peer arrived, unclaimed? The probe an any-source receive asks
 * each peer in turn (core/p2p.c); it only reads the engine's queues. */
int tether__tcp_probe(tether__ep *tep, int peer, tether__tag tag)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
    pthread_mutex_lock(&ep->mu);
    /* An any-source receive wants whatever comes, so the links a message from peer arrives on
     * (its own, or the neighbour's a routed one passes) are drained: frames that no receive has
     * asked for are read now, as unexpected, where tether__tcp_read(all = 0) would leave them in
     * the socket. */
    tether__link *first = tether__tcp_hop(ep, peer);
    for (int k = 0; k < first->nlinks && !ep->err; k++)
        if (first[k].fd >= 0 && !first[k].eof)
            tether__tcp_read(ep, &first[k], 1);
    /* Link 0 carries a frame of every message from peer, a routed one too (its queue-only link).
     * A linked peer's bye comes on it behind every frame it sent there, so after the bye a message
     * not there will never come; so after the leave notice that follows its frames (rx_leave),
     * which is how a routed peer says it. */
    const tether__link *l0 = &ep->links[peer][0];
    int rc = ep->err ? tether__tcp_sticky(ep) : tether__rxq_holds(&l0->unexpected, tag);
    if (rc == 0 && (l0->bye || l0->left))
        rc = TETHER__PROBE_GONE;
    /* The progress thread may read the message between this look and the caller's wait(): the
     * arrival counts as an event, so that wait returns at once instead of sleeping it out. */
    if (ep->loop)
        tether__loop_seen(ep->loop);
    pthread_mutex_unlock(&ep->mu);
    return rc;
}
