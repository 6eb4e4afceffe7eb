/* backends/rdma/ring_thread.h - ring mode's progress thread and the poll set of every sleeper
 * (ring_thread.c). */
#ifndef TETHER_RDMA_RING_THREAD_H
#define TETHER_RDMA_RING_THREAD_H

#include "rdma_impl.h"

/* Ring mode's progress thread (backends/net/loop.h over its handler), and the poll set every
 * sleeper uses, the thread and wait(): every device channel, then every side channel (ndev +
 * size entries), and what to take in once poll() said which are ready. */
int tether__rdma_thread_start(rdma_ep *ep);
int tether__rdma_poll_set(rdma_ep *ep, struct pollfd *pfd);
void tether__rdma_poll_ready(rdma_ep *ep, const struct pollfd *pfd);

#endif
