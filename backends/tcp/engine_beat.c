/* backends/tcp/engine_beat.c - the engine's heartbeats: liveness of the linked peers
 * (core/heartbeat.h has the thread and the ledger, backends/net/liveness.h the verdict).
 *
 * A rank may wait in a collective for hours while its peers are busy elsewhere (a serving loop's
 * workers waiting for rank 0's next request), so "no progress for TETHER_TIMEOUT" cannot tell a
 * busy peer from a stopped one. Every endpoint's heartbeat thread, every TETHER_HEARTBEAT, queues
 * a heartbeat frame (a header alone) on link 0 of each linked peer whose link is idle (on each of a
 * pair's links where it has several: engine_lane.c tells a dead link by its silence), and pushes
 * on sends left queued on a full socket; it never reads, so the engine's receive paths are as they
 * were, and never breaks the endpoint (a write that fails is the next call's to report). A
 * heartbeat is only sent on an idle link, so a peer that reads nothing for an hour holds at most
 * one queued here. What arrives is counted where the kernel has it (read, or waiting in the
 * socket: heartbeats may sit behind frames nobody has asked for yet), by the thread four times a
 * period and by a wait with no progress for a period (tether__tcp_alive) as often; that wait
 * also reads what the links hold, so an hour of heartbeats never fills a socket, and a peer that
 * has sent no byte, heartbeat or data, for TETHER__HEARTBEATS_MISSED periods breaks the endpoint. A
 * SIGSTOPped, hung (its threads not running) or unreachable peer is caught so within seconds,
 * while a peer that is merely busy keeps answering. A rank copying gigabytes with ep->mu held (a
 * message read from a peer's memory, or one that came unexpected) would keep the thread waiting
 * for the lock, and its peers would take it for a stopped one: the copy goes in bounded parts
 * (TETHER__BUSY_STEP) and between them the copying thread stands in for the heartbeat thread
 * (ep->stand_in). The copy stays under the lock: dropping it between parts would let
 * another thread break the endpoint and hand the program back a buffer this one still writes.
 * Routed peers (the ring) are watched by their own neighbours, whose break crosses the ring.
 * Each heartbeat also carries what this rank is doing and what it knows the others do
 * (core/waitstate.h: the deadlock and failed-peer verdicts); those bytes are not progress either,
 * and a ring passes every rank's record on, neighbour to neighbour. */
#include <stdlib.h>
#include <string.h>

#include "backends/net/liveness.h"
#include "backends/net/socket.h"
#include "engine_break.h"
#include "engine_impl.h"
#include "engine_lane.h"
#include "engine_rx.h"
#include "engine_shm.h"
#include "engine_write.h"

/* Bytes arrived from peer p over all its links: read, or waiting in the socket. */
static int arrived(void *arg, int p, uint64_t *bytes)
{
    const tether__tcp_ep *ep = arg;
    *bytes = 0;
    for (int i = 0; i < ep->nlinks[p]; i++) {
        const tether__link *l = &ep->links[p][i];
        size_t in, out;
        tether__tcp_queued(l, &in, &out);
        *bytes += l->bytes_recvd + in;
    }
    return ep->nlinks[p] > 0; /* routed peers are watched by their own neighbours */
}

static const char *silence_fails(void *arg, int p)
{
    const tether__tcp_ep *ep = arg;
    return ep->nlinks[p] > 0 && !ep->links[p][0].bye ? ep->addr[p] : NULL;
}

static void drain(void *arg)
{
    tether__tcp_ep *ep = arg;
    for (int i = 0; i < ep->nflat && !ep->err && !ep->loop; i++)
        if (ep->flat[i]->fd >= 0 && !ep->flat[i]->eof)
            tether__tcp_read(ep, ep->flat[i], 1);
}

static void fail(void *arg, const char *why)
{
    tether__tcp_break(arg, TETHER_ETIMEDOUT, "%s", why);
}

static const tether__liveness liveness = {
    .arrived = arrived, .silence_fails = silence_fails, .drain = drain, .fail = fail};

/* Queue t on l (when not NULL) and write what l's socket takes, without breaking ep when that
 * fails: this thread writes on its own and must not be the one to report a peer gone (a bye nobody
 * has read yet may explain it); the next call on that peer reports it. */
static void nudge(tether__tcp_ep *ep, tether__link *l, tether__txmsg *t)
{
    if (t)
        tether__tcp_tx_push(l, t);
    int e = tether__tcp_tx_flush(ep, l);
    if (e) {
        TLOG_TRACE("rank %d: writing to rank %d in the background: %s", ep->rank, l->peer,
                   strerror(e));
        tether__tcp_tx_drop_beats(l);
    } else {
        tether__tcp_kick_for_room(ep, l);
    }
}

/* This rank's wait-state records for the heartbeats (core/waitstate.h), into ep->records.blob:
 * the bytes, 0 when none are kept. moved is the payload the links carried, read here under ep->mu
 * without tether__tcp_moved's system calls: a change between two heartbeats is all that counts. */
static size_t pack_records(tether__tcp_ep *ep)
{
    uint64_t moved = 0;
    for (int i = 0; i < ep->nflat; i++)
        moved += ep->flat[i]->payload_sent + ep->flat[i]->payload_recvd;
    return tether__net_records_pack(&ep->records, ep->live, ep->size, moved, 0);
}

/* A heartbeat on l, with the records (len bytes) or a header alone, or its queued sends pushed on.
 */
static void beat_link(tether__tcp_ep *ep, tether__link *l, size_t len)
{
    if (l->fd < 0 || l->eof || l->bye || l->lane != TETHER__LANE_DIRECT)
        return;
    if (l->txhead) { /* the program may be away: move its sends on (whole frames stay whole) */
        nudge(ep, l, NULL);
        return;
    }
    tether__txmsg *t = calloc(1, sizeof *t + len); /* the link owns it: freed once written */
    if (!t)
        return; /* the next period tries again */
    if (len)    /* no records kept: no blob either */
        memcpy(t + 1, ep->records.blob, len);
    t->payload = (const unsigned char *)(t + 1);
    t->len = len;
    t->beat = 1;
    tether__frame f = {.type = TETHER__FRAME_HEARTBEAT, .len = len};
    tether__frame_encode(&f, t->hdr);
    nudge(ep, l, t);
}

/* The thread's work, ep->mu held: arrivals noted; with send, heartbeats (with the wait-state
 * records) on every idle link 0 and queued sends pushed on. A pair with several links gets a
 * header alone on each other lane too (the records go on the first lane with its socket), and an
 * ack of what each lane consumed (engine_lane.c): a lane that stops carrying is told from the
 * others by its silence. */
static void beat_locked(tether__tcp_ep *ep, int send)
{
    size_t len = send ? pack_records(ep) : 0;
    for (int p = 0; send && p < ep->size && !ep->err; p++) {
        int records = 1; /* on the first lane that has its socket */
        for (int k = 0; k < ep->nlinks[p] && !ep->err; k++) {
            tether__link *l = &ep->links[p][k];
            if (ep->nlinks[p] > 1)
                tether__tcp_lane_ack(ep, l);
            beat_link(ep, l, records ? len : 0);
            records &= l->lane != TETHER__LANE_DIRECT;
        }
    }
    int64_t now = tether__net_now_ms();
    if (!ep->err)
        tether__tcp_lane_watch(ep, now);
    if (!ep->err)
        tether__liveness_sample(&liveness, ep, ep->size, ep->beat, now);
}

static void beat(void *arg, int send)
{
    tether__tcp_ep *ep = arg;
    pthread_mutex_lock(&ep->mu);
    beat_locked(ep, send);
    pthread_mutex_unlock(&ep->mu);
}

/* ep->stand_in: the thread waits for ep->mu behind this one, so do its work here. Only writes and
 * counts, never reads or breaks ep, so any step of the engine may call it between its parts. */
static void stand_in(void *arg)
{
    tether__tcp_ep *ep = arg;
    /* a step of a copy that no link counts until it ends: progress, which the records must tell,
     * or the peer waiting on it would look stuck */
    tether__ws_progress(ep->records.ws);
    if (tether__heartbeat_stand_in(ep->beat, tether__net_now_ms()))
        beat_locked(ep, 1);
}

int tether__tcp_beat_start(tether__tcp_ep *ep, int period_ms)
{
    /* before any other thread can see ep: beat() reads ep->beat under ep->mu */
    int rc = tether__heartbeat_start(ep->size, period_ms, beat, ep, &ep->beat);
    if (ep->beat) {
        ep->stand_in = stand_in;
        ep->beat_ms = period_ms;
    }
    return rc;
}

void tether__tcp_watch(tether__ep *tep, tether__waitstate *ws)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
    pthread_mutex_lock(&ep->mu);
    tether__net_records_watch(&ep->records, ws, ep->size, TETHER__WS_BLOB_MAX);
    pthread_mutex_unlock(&ep->mu);
}

int tether__tcp_alive(tether__ep *tep)
{
    tether__tcp_ep *ep = (tether__tcp_ep *)tep;
    tether__liveness_ep e = {ep, ep->size, ep->beat, &ep->mu, &ep->err, ep->errmsg};
    return tether__liveness_check(&liveness, &e);
}
