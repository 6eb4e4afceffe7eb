/* backends/rdma/io.h - the data path: frames in and out, sends and receives (io.c). */
#ifndef TETHER_RDMA_IO_H
#define TETHER_RDMA_IO_H

#include "rdma_impl.h"

/* Caller holds ep->mu. */
int tether__rdma_poll_cqs(rdma_ep *ep, int *moved);
/* Arm every CQ's channel, then progress: before sleeping on the channels. */
int tether__rdma_arm(rdma_ep *ep, int *moved);
int tether__rdma_push(rdma_ep *ep, rdma_link *l);
/* Queue send r's parts (r->peer, r->buf, r->len, r->tag set) and push them. */
int tether__rdma_send(rdma_ep *ep, struct tether__req *r);
/* Post receive r's parts into buf (r->peer, r->len, r->tag set). */
int tether__rdma_recv(rdma_ep *ep, struct tether__req *r, unsigned char *buf);
int tether__rdma_sends_left(rdma_ep *ep);
/* Judge stale messages by p (core/transport.h's track), in io.c. */
void tether__rdma_track(tether__ep *tep, tether__passed *p);
/* Look again at the messages kept unexpected, once some call is over since the last look: a stale
 * one (core/passed.h) breaks the endpoint with EMISMATCH. With ep->mu held. */
int tether__rdma_sweep_stale(rdma_ep *ep);

#endif
