/* backends/tcp/engine_shm.c - the shared-memory rings of pairs on one host (shm_ring.h), in the
 * engine: the offer at creation, the switch of each direction from socket to ring, doorbells.
 *
 * A pair's only link between ranks of one host carries its frames through a ring instead of the
 * socket, unchanged: the same headers, tags, signatures, heartbeats, aborts and byes, parsed by
 * the same code (engine_rx.c reads the ring where it read the socket). The socket stays for what
 * memory cannot tell: its end is the peer's exit, and a doorbell byte on it wakes a peer asleep in
 * poll(). Exchange at creation, on the link's stream:
 * - the lower rank creates a segment and sends an offer naming it (an empty one where the rings
 *   are off, the peer is on another host or the segment could not be made); the higher rank maps
 *   it and answers with its switch frame (code 1: my frames go on in the ring), or declines
 *   (code 0). The lower rank, answered yes, sends its own switch frame.
 * - a direction moves to the ring at its sender's switch frame, the last bytes of frames on that
 *   direction of the socket: the reader reads the ring from there on, and everything after the
 *   switch on the socket is a doorbell. A doorbell is one byte, sent only by a side whose own
 *   switch frame is out (before, it would land inside frames): one owed meanwhile waits for it. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "backends/net/socket.h"
#include "core/log.h"
#include "engine_impl.h"
#include "engine_shm.h"

#define BELLS_READ 64 /* doorbell bytes read per recv */

/* One doorbell byte to the peer; a full socket already holds one, and a broken one is the read
 * side's to report. */
static void ring_bell(tether__link *l)
{
    if (!l->shm_tx) {
        l->shm_bell = 1;
        return;
    }
    char c = 0;
    (void)send(l->fd, &c, 1, MSG_DONTWAIT | TETHER__SEND_FLAGS);
}

static int log2_of(uint64_t v)
{
    int k = 0;
    while (v > 1) {
        v >>= 1;
        k++;
    }
    return k;
}

int tether__tcp_shm_offer(tether__tcp_ep *ep, tether__link *l, tether__frame *f)
{
    *f = (tether__frame){.type = TETHER__FRAME_SHM_OFFER, .code = log2_of(ep->shm_cap)};
    if (l->nlinks != 1)
        return 0; /* several links: the lanes' failover (engine_lane.c) keeps them */
    if (l->peer < ep->rank) {
        l->shm_due = 1; /* the higher rank waits for the offer, full or empty */
        return 0;
    }
    uint64_t id = 0;
    char why[TETHER__ERRMSG_MAX] = "out of memory";
    if (ep->shm_cap && tether__net_same_host(l->fd) &&
        (!(l->shm = calloc(1, sizeof *l->shm)) ||
         tether__shm_create(l->shm, ep->shm_cap, &id, why, sizeof why) < 0)) {
        TLOG_INFO("rank %d: no shared-memory ring with rank %d, its socket carries every byte: %s",
                  ep->rank, l->peer, why);
        free(l->shm);
        l->shm = NULL;
        id = 0;
    }
    f->len = id;
    l->shm_due = id != 0; /* an answer comes to a real offer only */
    return 1;
}

/* The higher rank: the peer's offer came. Take it (map, and switch) or decline it. */
static tether__shm_step take_offer(tether__tcp_ep *ep, tether__link *l, const tether__frame *f,
                                   const char **bad)
{
    l->shm_due = 0;
    if (!f->len || !ep->shm_cap)
        return f->len ? TETHER__SHM_DECLINE : TETHER__SHM_NOTHING;
    if (f->code < 12 || f->code > 30) {
        *bad = "a shared ring of a size out of range";
        return TETHER__SHM_BAD;
    }
    char why[TETHER__ERRMSG_MAX] = "out of memory";
    if (!(l->shm = calloc(1, sizeof *l->shm)) ||
        tether__shm_attach(l->shm, f->len, (uint64_t)1 << f->code, why, sizeof why) < 0) {
        TLOG_INFO("rank %d: cannot map rank %d's shared-memory ring, its socket carries every "
                  "byte: %s",
                  ep->rank, l->peer, why);
        free(l->shm);
        l->shm = NULL;
        return TETHER__SHM_DECLINE;
    }
    return TETHER__SHM_SWITCH;
}

tether__shm_step tether__tcp_shm_frame(tether__tcp_ep *ep, tether__link *l, const tether__frame *f,
                                       const char **bad)
{
    int lower = ep->rank < l->peer;
    *bad = "a shared-ring switch out of turn";
    if (f->type == TETHER__FRAME_SHM_OFFER) {
        *bad = "a shared-ring offer out of turn";
        return lower || !l->shm_due || l->shm ? TETHER__SHM_BAD : take_offer(ep, l, f, bad);
    }
    if ((f->code != 0 && f->code != 1) || !l->shm || l->shm_rx || f->len)
        return TETHER__SHM_BAD;
    tether__shm_step next = TETHER__SHM_NOTHING;
    if (lower) { /* the answer to our offer */
        if (!l->shm_due)
            return TETHER__SHM_BAD;
        l->shm_due = 0;
        tether__shm_unname(l->shm); /* the peer mapped it, or never will */
        if (f->code == 0) {
            tether__shm_close(l->shm);
            free(l->shm);
            l->shm = NULL;
            return TETHER__SHM_NOTHING;
        }
        next = TETHER__SHM_SWITCH;
    } else if (f->code == 0) {
        *bad = "a shared-ring offer declined by its maker";
        return TETHER__SHM_BAD;
    }
    l->shm_rx = 1;
    l->shm_drop = 1; /* what follows on the socket are doorbells */
    TLOG_INFO("rank %d: rank %d's frames come through shared memory now (a ring of %llu bytes)",
              ep->rank, l->peer, (unsigned long long)l->shm->cap);
    return next;
}

size_t tether__tcp_shm_send(tether__link *l, const struct iovec *iov, int n)
{
    int ring;
    size_t k = tether__shm_write(l->shm, iov, n, &ring);
    if (ring)
        ring_bell(l);
    return k;
}

long tether__tcp_shm_recv(tether__link *l, void *dst, size_t want)
{
    int ring;
    long k = tether__shm_read(l->shm, dst, want, &ring);
    if (ring)
        ring_bell(l);
    if (k < 0)
        errno = EPROTO;
    else if (k == 0 && !l->sock_eof)
        errno = EAGAIN, k = -1;
    return k;
}

void tether__tcp_shm_put_frame(tether__link *l, const unsigned char *hdr, const void *p, size_t len)
{
    int ring;
    tether__shm_put_frame(l->shm, hdr, p, len, &ring);
    if (ring)
        ring_bell(l);
}

int tether__tcp_shm_take_frame(tether__link *l, const unsigned char *hdr, void *dst, size_t n)
{
    int ring, k = tether__shm_take_frame(l->shm, hdr, dst, n, &ring);
    if (ring)
        ring_bell(l);
    return k;
}

void tether__tcp_shm_switched(tether__link *l)
{
    l->shm_tx = 1;
    if (l->shm_bell) {
        l->shm_bell = 0;
        ring_bell(l);
    }
}

void tether__tcp_shm_bells(tether__link *l)
{
    char buf[BELLS_READ];
    for (;;) {
        ssize_t n = recv(l->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0)
            continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            l->sock_eof = 1; /* closed, reset or failed: the peer is gone once the ring is read */
        if (n < 0 && errno == EINTR)
            continue;
        return;
    }
}

short tether__tcp_shm_events(const tether__link *l, int in)
{
    short ev = in ? POLLIN : 0;
    if (l->shm_rx) /* the socket holds doorbells only: its end shows even while bytes are held */
        ev = POLLIN | (in && tether__shm_arm_read(l->shm) ? POLLOUT : 0);
    if (l->txhead && !l->shm_tx)
        ev |= POLLOUT;
    if (l->txhead && l->shm_tx)
        ev |= POLLIN | (tether__shm_arm_room(l->shm) ? POLLOUT : 0);
    return ev;
}

void tether__tcp_queued(const tether__link *l, size_t *in, size_t *out)
{
    *in = *out = 0;
    if (l->fd < 0 || l->eof)
        return;
    tether__net_queued(l->fd, in, out);
    if (l->shm_rx)
        *in = (size_t)tether__shm_unread(l->shm);
    if (l->shm_tx)
        *out = (size_t)tether__shm_unconsumed(l->shm);
}
