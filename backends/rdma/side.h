/* backends/rdma/side.h - the TCP side channel, its set-up and what goes out on it (side.c). */
#ifndef TETHER_RDMA_SIDE_H
#define TETHER_RDMA_SIDE_H

#include "rdma_impl.h"

int tether__rdma_side_open(const tether__config *cfg, rdma_ep *ep);
int tether__rdma_side_swap(rdma_ep *ep, rdma_peer *pe, int peer, const void *mine, void *theirs,
                           size_t len, int64_t deadline_ms);
void tether__rdma_side_say(rdma_ep *ep, uint32_t type, int code, const char *text);
/* One message of type and len bytes of payload to peer, never blocking: 0, or errno. */
int tether__rdma_side_tell(rdma_ep *ep, int peer, uint32_t type, const void *payload, size_t len);

#endif
