/* backends/tcp/engine_kept.c - what the sender of a lane keeps until its peer acknowledges it, on
 * a pair with several links (engine_lane.c says why and how a lane fails over): the frames written
 * whole, freed by the peer's acks, and the replay of the stream from the position the peer
 * consumed.
 *
 * The write path (engine_write.c) keeps here every frame of a lane's stream it finishes, and the
 * lanes free and replay them from here, so this sits beneath both and calls neither. */
#include <stdlib.h>
#include <string.h>

#include "engine_break.h"
#include "engine_impl.h"
#include "engine_kept.h"

/* Copies a lane may hold unacknowledged: beyond, a small frame's part waits for its ack too (a
 * peer that stopped acking, or reading, costs this much memory per lane, not what it is sent). */
#define TETHER__LANE_COPIES_MAX ((uint64_t)4 << 20)

static void kept_push(tether__link *l, tether__txmsg *t)
{
    t->next = NULL;
    if (l->kept_tail)
        l->kept_tail->next = t;
    else
        l->kept = t;
    l->kept_tail = t;
}

void tether__tcp_lane_keep(tether__tcp_ep *ep, tether__link *l, tether__txmsg *t)
{
    t->end = l->tx_pos;
    t->passing = 0; /* counted off by tx_advance (engine_write.c) */
    if (t->tunnel) {
        l->tunnel_queued -= t->len;
        t->tunnel = 0;
    }
    if (t->req && t->len <= TETHER__LANE_COPY_MAX && l->copies < TETHER__LANE_COPIES_MAX) {
        tether__txmsg *c = malloc(sizeof *c + (size_t)t->len);
        if (c) { /* else the part waits for its ack */
            *c = *t;
            memcpy(c + 1, t->payload, (size_t)t->len);
            c->payload = (const unsigned char *)(c + 1);
            c->req = NULL;
            c->copy = 1;
            tether__tcp_part_done(ep, t->req);
            t = c;
        }
    }
    l->awaiting += t->req != NULL;
    l->copies += t->copy ? t->len : 0; /* a copy written again after a replay too */
    kept_push(l, t);
}

int tether__tcp_lane_acked(tether__tcp_ep *ep, tether__link *l, uint64_t pos)
{
    if (pos > l->tx_pos)
        return tether__tcp_protocol_error(ep, l, "an ack of bytes never sent");
    while (l->kept && l->kept->end <= pos) {
        tether__txmsg *t = l->kept;
        if (!(l->kept = t->next))
            l->kept_tail = NULL;
        if (t->req) {
            l->awaiting--;
            tether__tcp_part_done(ep, t->req);
        } else {
            l->copies -= t->copy ? t->len : 0;
            free(t);
        }
    }
    return TETHER_OK;
}

int tether__tcp_lane_rewind(tether__link *l, uint64_t pos)
{
    tether__txmsg *first = l->kept ? l->kept : l->txhead;
    uint64_t start = l->kept ? l->kept->end - (TETHER__FRAME_SIZE + l->kept->len)
                             : l->tx_pos - (first ? first->sent : 0);
    if (pos > l->tx_pos || (first ? pos < start : pos != l->tx_pos))
        return -1;
    if (l->kept) { /* what was kept goes first, written again */
        l->kept_tail->next = l->txhead;
        if (!l->txhead)
            l->txtail = l->kept_tail;
        l->txhead = l->kept;
        l->kept = l->kept_tail = NULL;
        l->awaiting = 0;
        l->copies = 0; /* queued again: counted when written again, copied or not */
    }
    for (tether__txmsg *t = l->txhead; t; t = t->next)
        t->sent = 0;
    if (first) {
        if (pos - start > TETHER__FRAME_SIZE + first->len)
            return -1;
        first->sent = pos - start;
    }
    l->tx_pos = pos;
    return 0;
}
