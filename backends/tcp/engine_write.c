/* backends/tcp/engine_write.c - a link's send queue written into its socket (or its ring,
 * engine_shm.c): frames gathered into one write, finished as their last byte goes out.
 *
 * Everything the engine sends ends here: the halves' frames (engine.c queues them), the lanes'
 * acks, failovers and tunnel frames (engine_lane.c, whose flush then moves the pair's tunnels),
 * heartbeats and control frames. It calls none of them: a frame finished on a pair with several
 * links is kept for its ack (engine_kept.c), any other finishes its request's part or is freed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "backends/net/socket.h"
#include "engine_impl.h"
#include "engine_kept.h"
#include "engine_shm.h"
#include "engine_write.h"

#define IOV_BATCH 64       /* frames gathered into one write */
#define SEND_COPY_MAX 4096 /* pieces up to this many bytes are copied together for one send() */

void tether__tcp_tx_push(tether__link *l, tether__txmsg *t)
{
    t->next = NULL;
    if (l->txtail)
        l->txtail->next = t;
    else
        l->txhead = t;
    l->txtail = t;
}

void tether__tcp_kick_for_room(tether__tcp_ep *ep, const tether__link *l)
{
    if (l->txhead && ep->loop && !ep->standing_by)
        tether__loop_kick(ep->loop);
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
        if (t->shm_switch) /* the frames behind it go into the ring (engine_shm.c) */
            break;
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
        uint64_t hdr_left = t->sent < TETHER__FRAME_SIZE ? TETHER__FRAME_SIZE - t->sent : 0;
        if (!t->beat)
            l->payload_sent += k > hdr_left ? k - hdr_left : 0;
        if (!t->beat && !t->ack)
            l->tx_pos += k; /* the lane's stream (engine_lane.c) */
        t->sent += k;
        n -= k;
        if (t->sent < TETHER__FRAME_SIZE + t->len)
            break;
        l->txhead = t->next;
        if (!l->txhead)
            l->txtail = NULL;
        if (t->passing && (l->passing -= t->len) < TETHER__PASS_MAX)
            l->pass_extra = 0; /* caught up: stalls grant again from nothing */
        if (t == l->ack)
            l->ack = NULL;
        if (t->shm_switch)
            tether__tcp_shm_switched(l);
        if (l->nlinks > 1 && !t->beat && !t->ack) /* kept until the peer acknowledges it */
            tether__tcp_lane_keep(ep, l, t);
        else if (t->req)
            tether__tcp_part_done(ep, t->req);
        else
            free(t);
    }
}

/* Write the gathered iov[0..n) (total bytes). One buffer goes out through send(), which costs less
 * in the kernel than sendmsg() (0.3 of a 4.7 us exchange of 40 bytes between two processes); so
 * do a few pieces up to SEND_COPY_MAX bytes, copied together first
 * (measured: docs/perf/notes.md, backends/tcp/engine_write.c). */
static ssize_t send_gathered(int fd, struct iovec *iov, int n, uint64_t total)
{
    if (n > 1 && total <= SEND_COPY_MAX) {
        unsigned char buf[SEND_COPY_MAX];
        size_t at = 0;
        for (int i = 0; i < n; i++) {
            memcpy(buf + at, iov[i].iov_base, iov[i].iov_len);
            at += iov[i].iov_len;
        }
        return send(fd, buf, at, TETHER__SEND_FLAGS);
    }
    if (n == 1)
        return send(fd, iov[0].iov_base, iov[0].iov_len, TETHER__SEND_FLAGS);
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    return sendmsg(fd, &mh, TETHER__SEND_FLAGS);
}

int tether__tcp_tx_write(tether__tcp_ep *ep, tether__link *l)
{
    struct iovec iov[IOV_BATCH];
    while (l->txhead) {
        uint64_t total;
        int niov = gather(ep, l, iov, &total);
        ssize_t n = l->shm_tx ? (ssize_t)tether__tcp_shm_send(l, iov, niov)
                              : send_gathered(l->fd, iov, niov, total);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : errno;
        }
        if (n == 0 && l->shm_tx) /* the ring is full */
            return 0;
        l->bytes_sent += (uint64_t)n;
        if (l->passing && n > 0) /* the onward link of chunks passing through moves */
            l->passing_at = tether__net_now_ms();
        tx_advance(ep, l, (uint64_t)n);
        if ((uint64_t)n < total)
            return 0;
    }
    return 0;
}

/* Forget l's heartbeat frames: its connection failed, and only the program's own frames may
 * report that (a heartbeat left queued would make the next wait that flushes l fail, though the
 * peer may have closed normally). */
void tether__tcp_tx_drop_beats(tether__link *l)
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
