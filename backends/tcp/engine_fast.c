/* backends/tcp/engine_fast.c - the small path on a pair's rings: a message straight into and out
 * of the shared ring (engine_shm.c), with no request, send queue, read-ahead or parsing.
 *
 * An 8-byte all-reduce between two ranks of one host spent most of its ~4,000 instructions per
 * call in the general path's layers (a request per message, the send queue and its gathering,
 * the read-ahead buffer, the frame parser, the posted queue), each a few percent. A data frame
 * through a pair's ring, with nothing queued ahead of it on the way out or read ahead on the way
 * in, needs none of them: the bytes on the ring are the same frame (header and payload), so the
 * peer reads it with either path. Whatever is not that simple case (frames queued ahead, bytes read
 * ahead, unexpected or earlier receives, a heartbeat or abort next in the ring, another tag or
 * length, which the general path reports as a mismatch) is left to the general path, untouched
 * (measured: docs/perf/notes.md, backends/tcp/engine_fast.c). */
#include "engine_fast.h"
#include "engine_shm.h"

/* The pair's only link, when it is a ring. */
static tether__link *ring_link(tether__tcp_ep *ep, int peer)
{
    tether__link *l = &ep->links[peer][0];
    return ep->nlinks[peer] == 1 && l->shm && !l->eof && l->fd >= 0 ? l : NULL;
}

_Static_assert(TETHER__SHM_HDR == TETHER__FRAME_SIZE, "a ring's frame header is a frame's");

int tether__tcp_fast_send(tether__tcp_ep *ep, int peer, const void *buf, size_t len,
                          tether__tag tag)
{
    tether__link *l = ring_link(ep, peer);
    if (!l || !l->shm_tx || l->txhead || l->bye || (tag.seq & TETHER__TAG_P2P) ||
        tether__cma_use(&l->cma, tether__tcp_read_min(ep, l->shm_tx, tag), len) ||
        !tether__shm_fits(l->shm, TETHER__FRAME_SIZE + (uint64_t)len))
        return 0;
    tether__frame f = {.tag = tag, .len = len, .type = TETHER__FRAME_DATA};
    unsigned char hdr[TETHER__FRAME_SIZE];
    tether__frame_encode(&f, hdr);
    tether__rxcache_note(&ep->rxcache, len);
    tether__tcp_shm_put_frame(l, hdr, buf, len); /* the room was there, we write alone */
    l->bytes_sent += TETHER__FRAME_SIZE + (uint64_t)len;
    l->payload_sent += len;
    l->tx_pos += TETHER__FRAME_SIZE + (uint64_t)len;
    return 1;
}

/* The next frame must be the data frame this receive expects, byte for byte: its header is the one
 * the sender's fast or general path writes for it (code 0). Any other (another tag, signature or
 * length, a heartbeat, an abort) is left where it is, for the general path to read and judge. */
int tether__tcp_fast_recv(tether__tcp_ep *ep, int peer, void *buf, size_t len, tether__tag tag,
                          const tether__rxmsg *first)
{
    tether__link *l = ring_link(ep, peer);
    if (!l || !l->shm_rx || l->cur || l->rlen || l->unexpected.head || l->posted.head != first)
        return 0;
    tether__frame f = {.tag = tag, .len = len, .type = TETHER__FRAME_DATA};
    unsigned char hdr[TETHER__FRAME_SIZE];
    tether__frame_encode(&f, hdr);
    if (!tether__tcp_shm_take_frame(l, hdr, buf, len))
        return 0;
    l->bytes_recvd += TETHER__FRAME_SIZE + (uint64_t)len;
    l->payload_recvd += len;
    l->rx_pos += TETHER__FRAME_SIZE + (uint64_t)len;
    return 1;
}
