/* backends/rdma/silence.h - UC links that go unanswered taken out of use (silence.c). */
#ifndef TETHER_RDMA_SILENCE_H
#define TETHER_RDMA_SILENCE_H

#include "rdma_impl.h"

/* UC links whose frames go unanswered while nothing arrives on them are taken out of use
 * (tether__rdma_link_down), as if their QP had failed. Caller holds ep->mu. */
int tether__rdma_silence_check(rdma_ep *ep, int64_t now_us);

#endif
