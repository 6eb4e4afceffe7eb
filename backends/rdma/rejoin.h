/* backends/rdma/rejoin.h - a dead link whose device is back gets a fresh QP pair and is used
 * again (rejoin.c). */
#ifndef TETHER_RDMA_REJOIN_H
#define TETHER_RDMA_REJOIN_H

#include "rdma_impl.h"

/* Caller holds ep->mu. REJOIN_*: rdma_link.rejoin. */
#define REJOIN_NONE 0
#define REJOIN_SENT 1      /* our fresh QP is at INIT, its details told the peer */
#define REJOIN_CONNECTED 2 /* at RTS with the peer's: its frames are taken, ours wait */
/* l just left: with its port up (nothing says it was pulled), not tried again for a while. */
void tether__rdma_rejoin_later(rdma_ep *ep, rdma_link *l);
/* Both QPs of dead link l at RTS and its lane's carried frames all in: l carries its lane again. */
int tether__rdma_revive(rdma_ep *ep, rdma_link *l);
/* Look at dead links' ports (every REJOIN_CHECK_MS) and move rejoins on. */
int tether__rdma_rejoin_tick(rdma_ep *ep, int64_t now_us);
/* The peer's fresh QP for its link on lane lane (SIDE_REJOIN), or that it is connected (info
 * NULL: SIDE_REJOINED). */
int tether__rdma_peer_rejoin(rdma_ep *ep, int peer, uint32_t lane, const rdma_qp_info *info);
/* Carrier c's peer has handled more of its frames: siblings back since get the credits they
 * held back for them (rdma_link.owed); all of them when c itself leaves (gone: 1). */
void tether__rdma_repay(rdma_ep *ep, rdma_link *c, int gone);

#endif
