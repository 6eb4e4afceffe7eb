/* backends/rdma/side_read.c - what comes in on the side channels (the TCP link to each peer,
 * side.c): heartbeats (their wait-state records merged), a peer's abort, its bye with the frame
 * count of each link, a cable that left or came back on its side (failover.c, rejoin.c). Reading is
 * apart from writing (side.c), which those handlers call: no call cycle. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "backends/net/socket.h"
#include "failover.h"
#include "rdma_impl.h"
#include "rejoin.h"
#include "retransmit.h"
#include "side_read.h"
#include "state.h"

/* One whole message at the start of side_buf: 1 (consumed), 0 (incomplete), or an error. A bye's
 * text is the frame count of each link. */
static int side_message(rdma_ep *ep, rdma_peer *l, int peer)
{
    uint32_t h[4]; /* type, code, links, text length */
    size_t whole;
    if (l->side_len < SIDE_HDR)
        return 0;
    memcpy(h, l->side_buf, sizeof h);
    if (h[3] > (h[0] == SIDE_BEAT ? SIDE_BEAT_MAX : SIDE_TEXT_MAX) || h[0] < SIDE_BYE ||
        h[0] > SIDE_REJOINED ||
        (h[0] == SIDE_BYE &&
         (h[1] > BYE_CLOSED || h[2] != (uint32_t)l->nlinks || h[3] != 4 * h[2])) ||
        (h[0] == SIDE_DOWN && (h[3] < 8 || h[3] > 8 + SIDE_DOWN_WHY_MAX)) ||
        (h[0] == SIDE_REJOIN && h[3] != 4 + sizeof(rdma_qp_info)) ||
        (h[0] == SIDE_REJOINED && h[3] != 4))
        return tether__rdma_break(ep, TETHER_ENET,
                                  "rdma: rank %d (%s) sent a malformed side-channel "
                                  "message (type %u)",
                                  peer, l->addr, h[0]);
    whole = SIDE_HDR + h[3];
    if (l->side_len < whole)
        return 0;
    if (h[0] == SIDE_ABORT) {
        int code = tether__net_reported((int)h[1]);
        return tether__rdma_break(ep, code, "rank %d reported: %.*s", peer, (int)h[3],
                                  (const char *)l->side_buf + SIDE_HDR);
    }
    if (h[0] == SIDE_REJOIN || h[0] == SIDE_REJOINED) {
        uint32_t lane;
        rdma_qp_info info = {0};
        int rc;
        memcpy(&lane, l->side_buf + SIDE_HDR, 4);
        if (h[0] == SIDE_REJOIN)
            memcpy(&info, l->side_buf + SIDE_HDR + 4, sizeof info);
        rc = tether__rdma_peer_rejoin(ep, peer, lane, h[0] == SIDE_REJOIN ? &info : NULL);
        if (rc != TETHER_OK)
            return rc;
    } else if (h[0] == SIDE_DOWN) {
        uint32_t d[2]; /* lane, frames taken */
        int rc;
        memcpy(d, l->side_buf + SIDE_HDR, sizeof d);
        if ((rc = tether__rdma_peer_down(ep, peer, d[0], d[1],
                                         (const char *)l->side_buf + SIDE_HDR + sizeof d,
                                         h[3] - sizeof d)) != TETHER_OK)
            return rc;
    } else if (h[0] == SIDE_BYE) {
        l->bye = 1;
        l->bye_final = h[1] == BYE_CLOSED;
        memcpy(l->bye_frames, l->side_buf + SIDE_HDR, 4 * h[2]);
        if (l->bye_final) /* it took what it needed: no resends to it (before, a ring rank's
                             frames may carry others' messages, and it still acknowledges) */
            for (int k = 0; k < l->nlinks; k++)
                tether__rdma_forget(ep, &l->link[k]);
    } else if (h[3] && ep->records.ws) { /* a heartbeat's records; its bytes were the news */
        char why[TETHER__ERRMSG_MAX];
        if (tether__ws_merge(ep->records.ws, peer, l->side_buf + SIDE_HDR, h[3], why, sizeof why) <
            0)
            return tether__rdma_break(ep, TETHER_ENET, "rdma: %s (%s)", why, l->addr);
    }
    memmove(l->side_buf, l->side_buf + whole, l->side_len - whole);
    l->side_len -= whole;
    return 1;
}

int tether__rdma_side_read(rdma_ep *ep, rdma_peer *l, int peer)
{
    while (!ep->err && !l->eof) {
        ssize_t n =
            recv(l->fd, l->side_buf + l->side_len, sizeof l->side_buf - l->side_len, MSG_DONTWAIT);
        if (n > 0) {
            int rc;
            l->side_len += (size_t)n;
            l->side_bytes += (uint64_t)n;
            while ((rc = side_message(ep, l, peer)) == 1)
                ;
            TRY(rc);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return TETHER_OK;
        if (n < 0 && errno == EINTR)
            continue;
        if (l->bye) { /* after its bye, the end of the stream is expected */
            l->eof = 1;
            l->eof_ms = tether__net_now_ms();
            for (int k = 0; k < l->nlinks; k++) { /* nothing is acknowledged any more */
                tether__rdma_forget(ep, &l->link[k]);
                TRY(tether__rdma_gone_check(ep, &l->link[k]));
            }
            return TETHER_OK;
        }
        return tether__rdma_break(ep, TETHER_EPEER,
                                  "rank %d (%s) closed its side channel%s%s: it "
                                  "probably exited, see its output",
                                  peer, l->addr, n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
    }
    return ep->err;
}
