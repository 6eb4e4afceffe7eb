/* backends/rdma/retransmit.h - UC's resends and acknowledgements; no-ops on RC (retransmit.c). */
#ifndef TETHER_RDMA_RETRANSMIT_H
#define TETHER_RDMA_RETRANSMIT_H

#include "rdma_impl.h"

/* Caller holds ep->mu. */
/* A data frame of number seq just went in slot (len bytes): keep it for a resend. */
void tether__rdma_keep(rdma_ep *ep, rdma_link *l, uint32_t seq, int slot, int len);
/* What a frame from the peer says of ours: acknowledgements, and a NACK's resend. */
int tether__rdma_acked(rdma_ep *ep, rdma_link *l, const rdma_hdr *h);
/* Kept frames the peer has both taken (acknowledged) and handled (its credits counted them)
 * leave their send slots; called as either count grows. */
void tether__rdma_free_kept(rdma_ep *ep, rdma_link *l);
/* A data frame whose number is not the next one's: dropped (its slot reposted); a gap is NACKed. */
int tether__rdma_out_of_order(rdma_ep *ep, rdma_link *l, int slot, const rdma_hdr *h);
/* A data frame taken or dropped: a probe is answered with a NACK at once. */
void tether__rdma_probed(rdma_ep *ep, rdma_link *l, const rdma_hdr *h);
/* A control frame saying the peer sent frames we have not seen: NACK them. */
void tether__rdma_behind(rdma_ep *ep, rdma_link *l, const rdma_hdr *h);
/* Frames due again (a NACK, a timeout) go, in order; 1 while some remain: no new frame may go. */
int tether__rdma_resend(rdma_ep *ep, rdma_link *l, int64_t now_us);
/* Whether a control frame may go: fewer than CTRL_SLOTS unseen (older ones count lost). */
int tether__rdma_ctrl_room(rdma_ep *ep, rdma_link *l, int64_t now_us);
/* A data frame was taken in order: its acknowledgement is owed from now. */
void tether__rdma_taken(rdma_ep *ep, rdma_link *l);
/* Microseconds until the peer should hear from us though nothing else goes (frames taken and
 * untold for ACK_DELAY_US; a duplicate or a gap: at once): 0 now, -1 nothing owed. */
int64_t tether__rdma_ack_due(const rdma_ep *ep, const rdma_link *l, int64_t now_us);
/* UC, frames waiting for credits on l: in how many µs a credit probe is due (0: now), -1 none.
 * tether__rdma_starve notes the wait; tether__rdma_fed, credits in. */
int64_t tether__rdma_credit_due(const rdma_ep *ep, const rdma_link *l, int64_t now_us);
void tether__rdma_starve(const rdma_ep *ep, rdma_link *l, int64_t now_us);
void tether__rdma_fed(rdma_link *l);
/* Send slots of l whose frames are still on their way: on RC a frame kept only for a failover is
 * delivered once its send completed (closing does not wait for its acknowledgement). */
int tether__rdma_sending(const rdma_ep *ep, const rdma_link *l);
/* The peer left (bye): what it has not acknowledged it will never need. */
void tether__rdma_forget(rdma_ep *ep, rdma_link *l);
/* How long probes timeouts in a row take, from the first (silence.c's threshold). */
int64_t tether__rdma_probes_us(const rdma_ep *ep, const rdma_link *l, int probes);

#endif
