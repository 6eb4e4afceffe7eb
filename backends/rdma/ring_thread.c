/* backends/rdma/ring_thread.c - ring mode's progress thread: forwards and watches while the program
 * is away.
 *
 * A message between distant ranks passes through ranks that may be computing outside tether, and a
 * rank that does not poll its CQs leaves frames unreposted and the sender without credits. So in
 * ring mode each endpoint runs backends/net's event loop over this file's handler: it sleeps in
 * poll() on every device's completion channel and every side channel, and under the endpoint's
 * mutex moves whatever is ready, as test() does. When the endpoint breaks it tells every peer once
 * (abort on the side channels). While the program's threads are inside calls they move the frames
 * themselves (isend, test, and wait(), which sleeps in poll() on the same set as in a full mesh),
 * and the thread stands by (loop.h): it watches the channels again once no call came for
 * TETHER__LOOP_STANDBY_MS. Sleeping in wait() until this thread signalled made every completion
 * cost two wake-ups in a row, the thread's and then the waiter's. */
#include <string.h>

#include "device.h"
#include "io.h"
#include "rdma_impl.h"
#include "ring_thread.h"
#include "side.h"
#include "side_read.h"
#include "state.h"

/* Before each sleep: arm the channels (taking what completed meanwhile), and after a break tell
 * every peer now, not at its timeout. */
static int due(void *arg)
{
    rdma_ep *ep = arg;
    int moved = 0;
    if (!ep->err)
        tether__rdma_arm(ep, &moved);
    if (ep->err && !ep->propagated) {
        ep->propagated = 1;
        tether__rdma_side_say(ep, SIDE_ABORT, ep->err, ep->errmsg);
    }
    if (moved || ep->err)
        ep->events++;
    return moved; /* completions came: frames may have been reposted or freed, look again */
}

int tether__rdma_poll_set(rdma_ep *ep, struct pollfd *pfd)
{
    int n = 0;
    for (int d = 0; d < ep->ndev; d++)
        pfd[n++] = (struct pollfd){.fd = ep->devs[d].ch->fd, .events = POLLIN};
    for (int p = 0; p < ep->size; p++)
        pfd[n++] = (struct pollfd){.fd = p == ep->rank || ep->peers[p].eof ? -1 : ep->peers[p].fd,
                                   .events = POLLIN};
    return n;
}

void tether__rdma_poll_ready(rdma_ep *ep, const struct pollfd *pfd)
{
    for (int d = 0; d < ep->ndev; d++)
        if (pfd[d].revents)
            tether__rdma_dev_events(ep, &ep->devs[d]);
    for (int p = 0; p < ep->size; p++)
        if (pfd[ep->ndev + p].revents)
            tether__rdma_side_read(ep, &ep->peers[p], p);
}

/* While healthy: the poll set. */
static int fds(void *arg, struct pollfd *pfd)
{
    rdma_ep *ep = arg;
    return ep->err ? 0 : tether__rdma_poll_set(ep, pfd);
}

static void ready(void *arg, const struct pollfd *pfd, int n)
{
    rdma_ep *ep = arg;
    (void)n;
    tether__rdma_poll_ready(ep, pfd);
    ep->events++; /* a bye or abort may have come: close() and waits look again */
}

/* The program is inside calls (one asleep in wait(), or any call since the last look): it moves the
 * frames. A broken endpoint's thread never stands by: its abort must reach the peers (due). */
static int standby(void *arg)
{
    rdma_ep *ep = arg;
    int inside = ep->drivers > 0 || ep->calls != ep->calls_seen;
    ep->calls_seen = ep->calls;
    return inside && !ep->err;
}

static void failed(void *arg, int err)
{
    rdma_ep *ep = arg;
    tether__rdma_break(ep, TETHER_ENET, "rdma: rank %d: poll() in the progress thread: %s",
                       ep->rank, strerror(err));
}

int tether__rdma_thread_start(rdma_ep *ep)
{
    tether__loop_handler h = {.arg = ep,
                              .nfds = ep->ndev + ep->size,
                              .due = due,
                              .fds = fds,
                              .ready = ready,
                              .failed = failed,
                              .standby = standby};
    return tether__loop_start(&h, &ep->mu, &ep->events, "rdma", &ep->loop);
}
