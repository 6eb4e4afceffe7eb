/* backends/rdma/silence.c - a UC cable that stops carrying without a word is taken out of use.
 *
 * A dead cable usually says so: its QP errors (failover.c). One whose far end stopped listening
 * (a port that drops everything, a receiver that lost its state) does not on UC: its QP stays at
 * RTS, its port active, and everything sent on it vanishes, resends included, so the job would wait
 * for TETHER_TIMEOUT. A link is declared dead, through the path a QP error takes, when its oldest
 * unacknowledged frame has gone SILENT_PROBES times as a probe with nothing acknowledged
 * (retransmit.c's backoff) and nothing at all (data, acknowledgement, NACK, credits) has arrived
 * on it for SILENT_MIN_US or the time those probes take (1 + 2 + 4 + 8 resend waits), whichever is
 * longer. A lossy link never meets both: a probe's answer or any frame at all ends the silence,
 * and at 2 % loss four probes in a row and every other frame for half a second are all lost with a
 * probability far below 10^-6.
 *
 * That alone could be a peer that stopped rather than a cable: so the link goes only if a sibling
 * to the same peer heard something since its last frame; without one (every cable to the peer
 * silent, or only one), only after TETHER__HEARTBEATS_MISSED + 1 heartbeats, so that a peer that
 * stopped is named by the heartbeats first (its heartbeat thread answers probes while it lives:
 * heartbeat.c uc_tick). The last cable to a peer taken out fails the job, as a QP error does. A
 * peer that stops just after a sibling's last frame may cost that link a needless failover (it is
 * tried again later); the job's verdict is still the heartbeats'.
 *
 * RC needs none of this: the NIC resends an unanswered frame retry_cnt times and then fails the QP
 * (IBV_WC_RETRY_EXC_ERR), which fails the cable over (a silent RC cable leaves with "QP error").
 *
 * Coming back: a silent cable's port is active, so rejoin.c tries it again after a back-off of a
 * second, doubled each time it leaves again (rejoin.c tether__rdma_rejoin_later): once back, it is
 * judged as any link, and taken out again if still silent. */
#include <stdio.h>

#include "core/config.h"
#include "failover.h"
#include "rdma_impl.h"
#include "retransmit.h"
#include "silence.h"
#include "state.h"

#define SILENT_PROBES 4
#define SILENT_MIN_US 500000

/* Frames arrived on l since the last look: it was heard now. */
static void heard(rdma_link *l, int64_t now_us)
{
    if (l->heard_us == 0 || l->frames_in != l->frames_seen) {
        l->frames_seen = l->frames_in;
        l->heard_us = now_us;
    }
}

/* A live sibling of l heard since l's last frame, or NULL. Not "heard lately": once a silent
 * link holds back a call, its siblings carry their parts and fall idle. */
static rdma_link *answering(rdma_ep *ep, rdma_link *l)
{
    rdma_peer *pe = &ep->peers[l->peer];
    for (int k = 0; k < pe->nlinks; k++) {
        rdma_link *s = &pe->link[k];
        if (s != l && !s->down && s->qp && s->heard_us > l->heard_us)
            return s;
    }
    return NULL;
}

static int judge(rdma_ep *ep, rdma_link *l, int64_t now_us)
{
    int64_t quiet = now_us - l->heard_us, limit;
    rdma_link *s;
    char why[128];
    if (l->down || !l->qp || ep->peers[l->peer].bye || l->win.acked == l->tx_seq ||
        l->win.backoff < SILENT_PROBES)
        return TETHER_OK;
    limit = tether__rdma_probes_us(ep, l, SILENT_PROBES);
    if (limit < SILENT_MIN_US)
        limit = SILENT_MIN_US;
    if (quiet < limit)
        return TETHER_OK;
    s = answering(ep, l);
    if (s)
        snprintf(why, sizeof why, "no acknowledgement for %.1f s while %s answered",
                 (double)quiet / 1e6, s->dev->name);
    else if (quiet >= (int64_t)(TETHER__HEARTBEATS_MISSED + 1) * ep->beat_ms * 1000)
        snprintf(why, sizeof why,
                 "no acknowledgement for %.1f s, and nothing on any other cable to it",
                 (double)quiet / 1e6);
    else
        return TETHER_OK;
    return tether__rdma_link_down(ep, l, why);
}

int tether__rdma_silence_check(rdma_ep *ep, int64_t now_us)
{
    if (!ep->uc)
        return TETHER_OK;
    for (RDMA_EACH_LINK(ep, l))
        heard(l, now_us);
    for (RDMA_EACH_LINK(ep, l))
        TRY(judge(ep, l, now_us));
    return TETHER_OK;
}
