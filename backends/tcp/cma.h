/* backends/tcp/cma.h - cross-memory attach: ranks of one host read large messages straight from
 * the sender's memory (Linux process_vm_readv), one copy instead of two socket copies.
 *
 * Through a socket every byte is copied twice by the kernel (into the socket, out of it), and on
 * one host those copies are the whole cost of a large collective. MPI's shared-memory transport and
 * NCCL's SHM transport avoid them the same way. The socket still carries everything else: the
 * headers, the order, the matching and every failure.
 *
 * Protocol, on the links a rank already has (frame.h):
 * - At creation each rank offers its peers on this host (link 0) its pid, the address and value of
 *   a random cookie, and the address of its withdraw epoch; every other peer, and every peer when
 *   it does not take part, gets an empty offer, so both ends always expect the same frames. A peer
 * that reads the cookie back with process_vm_readv answers yes; anything else (another pid
 * namespace, no permission, not Linux, TETHER_TCP_CMA_MIN=0) answers no, and that direction stays
 * on the socket. The endpoint is ready once both offers are answered: no frame of this exchange is
 * left to arrive later, unasked, at a rank that is closing.
 * - After a yes, a message of at least TETHER_TCP_CMA_MIN bytes travels as one CMA_DATA frame per
 *   stripe: the tag and length as a data frame has them, and a descriptor (address, id, epoch)
 *   instead of the payload. The receiver copies the stripe into the posted receive and answers
 *   CMA_DONE with the id; only then does the send finish, so the buffer stays valid while it is
 *   read.
 * - A descriptor nobody has asked for waits, like bytes left in a socket, until its receive is
 *   posted; a wait that passes idle copies such descriptors out (to the heap) so that two ranks
 * that each finish a send before receiving still progress.
 * - A sender whose endpoint breaks or closes with descriptors still unread bumps its epoch before
 *   returning, so its buffers may be freed: a receiver compares the epoch after each copy and fails
 *   rather than deliver what it read from memory the program may already have reused.
 * Every function here is called with ep->mu held. */
#ifndef TETHER_TCP_CMA_H
#define TETHER_TCP_CMA_H

#include <stdint.h>

#include "engine_impl.h"

/* TETHER_TCP_CMA_MIN: the smallest message read from the sender's memory; 0 turns it off. */
int tether__cma_min(uint64_t *out);

/* Exchange offers with every peer on this host (link 0 of each); at most timeout_ms. Called
 * without ep->mu, before any other thread knows ep. */
int tether__cma_negotiate(tether__tcp_ep *ep, int timeout_ms);

/* Whether a message of len bytes to peer travels as descriptors. */
int tether__cma_use(const tether__tcp_ep *ep, int peer, uint64_t len);

/* Make t, the part of request r for the stripe at payload on link l, a descriptor frame of f's tag
 * and length; r gets one more part to finish, the peer's CMA_DONE. */
void tether__cma_describe(tether__link *l, tether__txmsg *t, const tether__frame *f,
                          const unsigned char *payload);

/* A header of one of the CMA frame types arrived on l (engine_rx.c's rx_start). */
int tether__cma_rx_start(tether__tcp_ep *ep, tether__link *l, const tether__frame *f);
/* The payload of that frame (offer or descriptor) is read. */
int tether__cma_rx_done(tether__tcp_ep *ep, tether__link *l);

/* A posted receive part claims m, an unexpected descriptor of l: copy its stripe into part. */
int tether__cma_claim(tether__tcp_ep *ep, tether__link *l, tether__rxmsg *part, tether__rxmsg *m);

/* Whether l must be read although no receive is posted on it: an offer, an answer or a CMA_DONE
 * is due. */
int tether__cma_wants_input(const tether__link *l);

/* A wait passed idle: copy every unexpected descriptor out, so that its sender can finish. */
void tether__cma_unblock(tether__tcp_ep *ep);

/* The endpoint breaks or closes: forget the sends whose CMA_DONE has not come, and if there were
 * any, bump the epoch so that their readers discard what they read. */
void tether__cma_withdraw(tether__tcp_ep *ep);

#endif
