/* backends/rdma/state.c - what every file of the backend reports through: the endpoint's first
 * failure, a peer gone while a receive waits for it, and the walk over every link. It calls no
 * other file of the backend. */
#include <stdarg.h>
#include <stdio.h>

#include "backends/net/socket.h"
#include "rdma_impl.h"
#include "register.h"
#include "state.h"

int tether__rdma_break(rdma_ep *ep, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tether__net_fail_first(&ep->err, ep->errmsg, "rdma", code, fmt, ap);
    va_end(ap);
    tether__rdma_rv_drop(ep); /* no WRITE may touch the buffers the caller frees on this error */
    return ep->err;
}

rdma_link *tether__rdma_first_link(rdma_ep *ep)
{
    for (int p = 0; p < ep->size; p++)
        if (ep->peers[p].nlinks)
            return &ep->peers[p].link[0];
    return NULL;
}

rdma_link *tether__rdma_next_link(rdma_ep *ep, rdma_link *l)
{
    if (l->lane + 1 < ep->peers[l->peer].nlinks)
        return &ep->peers[l->peer].link[l->lane + 1];
    for (int p = l->peer + 1; p < ep->size; p++)
        if (ep->peers[p].nlinks)
            return &ep->peers[p].link[0];
    return NULL;
}

/* How long after a closed peer's side channel ended its frames still missing here are given up:
 * the frames of a QP destroyed arrive within microseconds or never (UC: lost, and no one resends
 * them now). */
#define GONE_GRACE_MS 1000

int tether__rdma_all_in(const rdma_peer *pe, int final)
{
    if (pe->eof && tether__net_now_ms() - pe->eof_ms >= GONE_GRACE_MS)
        return 1;
    if (!pe->bye || (final && !pe->bye_final))
        return 0;
    for (int k = 0; k < pe->nlinks; k++) {
        const rdma_link *lk = &pe->link[k];
        /* ordered: once rx_seq has reached the count, its own frames are in (a closing ring
         * neighbour may pass on others' frames after it) */
        if (!lk->down && ((int32_t)(lk->rx_seq - pe->bye_frames[k]) < 0 || lk->nheld))
            return 0;
    }
    return 1;
}

/* What a receive from pe waits on here: a message not yet claimed, or one half arrived. */
static int waited_on(const rdma_peer *pe)
{
    for (int k = 0; k < MAX_CABLES; k++)
        if (pe->posted[k].head || pe->arriving[k].cur)
            return 1;
    return 0;
}

/* Frames of pe's that never arrived after its process ended, for the message. */
static uint32_t frames_lost(const rdma_peer *pe)
{
    uint32_t lost = 0;
    for (int k = 0; k < pe->nlinks; k++)
        if (!pe->link[k].down && (int32_t)(pe->bye_frames[k] - pe->link[k].rx_seq) > 0)
            lost += pe->bye_frames[k] - pe->link[k].rx_seq;
    return pe->bye ? lost : 0;
}

/* A peer that closed normally while a receive from it waits on one of its lanes: once every frame
 * it sent on its links in use is in and handled (none held back behind a frame passing through),
 * nothing more of its own will come. A dead cable's count is left out: the frames it did not
 * deliver went on another (failover.c), whose count has them, and a lane's frames may come on any
 * link. Only its own messages count: after its first bye a ring neighbour may still pass on
 * others' messages while it lingers. */
int tether__rdma_gone_check(rdma_ep *ep, rdma_link *l)
{
    rdma_peer *pe = &ep->peers[l->peer];
    char lost[64] = "";
    if (!pe->bye || !waited_on(pe) || !tether__rdma_all_in(pe, 0))
        return TETHER_OK;
    if (frames_lost(pe))
        snprintf(lost, sizeof lost, "; %u frame(s) it sent never arrived", frames_lost(pe));
    return tether__rdma_break(ep, TETHER_EPEER,
                              "rank %d closed its endpoint (its program freed the "
                              "group or is exiting) while rank %d still expects a message from "
                              "it%s",
                              l->peer, ep->rank, lost);
}

/* Ring mode: a message from a rank with no link here comes through the neighbours. Once every
 * neighbour has closed for good (its last bye, every frame it sent in), nothing can come any more,
 * and a receive waiting for such a rank never ends otherwise. */
int tether__rdma_stranded_check(rdma_ep *ep)
{
    int src = -1;
    for (int p = 0; p < ep->size && src < 0; p++)
        if (p != ep->rank && !ep->peers[p].nlinks && waited_on(&ep->peers[p]))
            src = p;
    if (src < 0)
        return TETHER_OK;
    for (int p = 0; p < ep->size; p++)
        if (ep->peers[p].nlinks && !tether__rdma_all_in(&ep->peers[p], 1))
            return TETHER_OK;
    return tether__rdma_break(ep, TETHER_EPEER,
                              "rank %d still expects a message from rank %d, but every neighbour "
                              "that could pass it on has closed its endpoint (their programs "
                              "freed the group or are exiting)",
                              ep->rank, src);
}
