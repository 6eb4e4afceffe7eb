/* backends/rdma/ring_thread.c - ring mode's progress thread: forwards and watches while the program
 * is away.
 *
 * A message between distant ranks passes through ranks that may be computing outside tether, and a
 * rank that does not poll its CQs leaves frames unreposted and the sender without credits. So in
 * ring mode each endpoint runs backends/net's event loop over this file's handler: it sleeps in
 * poll() on every device's completion channel and every side channel, and under the endpoint's
 * mutex moves whatever is ready, as test() does. When the endpoint breaks it tells every peer once
 * (abort on the side channels). The program's threads still move frames in isend/test, but sleep
 * in wait() until the loop (or a test() that moved something) signals, so only one thread takes
 * the channels' events and nobody sleeps through a completion another thread took. */
#include <string.h>

#include "rdma_impl.h"

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

/* While healthy: every device channel, then every side channel. */
static int fds(void *arg, struct pollfd *pfd)
{
    rdma_ep *ep = arg;
    int n = 0;
    if (ep->err)
        return 0;
    for (int d = 0; d < ep->ndev; d++)
        pfd[n++] = (struct pollfd){.fd = ep->devs[d].ch->fd, .events = POLLIN};
    for (int p = 0; p < ep->size; p++)
        pfd[n++] = (struct pollfd){.fd = p == ep->rank || ep->peers[p].eof ? -1 : ep->peers[p].fd,
                                   .events = POLLIN};
    return n;
}

static void ready(void *arg, const struct pollfd *pfd, int n)
{
    rdma_ep *ep = arg;
    (void)n;
    for (int d = 0; d < ep->ndev; d++)
        if (pfd[d].revents)
            tether__rdma_dev_events(ep, &ep->devs[d]);
    for (int p = 0; p < ep->size; p++)
        if (pfd[ep->ndev + p].revents)
            tether__rdma_side_read(ep, &ep->peers[p], p);
    ep->events++; /* a bye or abort may have come: close() and waits look again */
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
                              .failed = failed};
    return tether__loop_start(&h, &ep->mu, &ep->events, "rdma", &ep->loop);
}
