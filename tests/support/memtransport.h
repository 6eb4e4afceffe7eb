/* tests/support/memtransport.h - an in-process transport for tests: the ranks of a world are
 * threads of one process, messages are copied between their buffers.
 *
 * Ranks find each other through the job token: every thread opens tether__memt_ops with a
 * tether__config whose rank, size, job_token and timeout_ms are set (same token, same size), and
 * those that share a token form one world. Matching follows core/transport.h to the letter (tags,
 * order, TETHER_EMISMATCH on another length or signature, sticky errors), and a send completes only
 * when a receive has taken its data (rendezvous), so an algorithm that reuses a buffer too early or
 * waits in the wrong order shows up here as wrong data or a timeout. The caps are
 * TETHER__CAP_DIRECT unless a test sets others (tether__memt_set_caps), e.g. 0 to make algorithm
 * choice act as on the ring. */
#ifndef TETHER_TESTS_MEMTRANSPORT_H
#define TETHER_TESTS_MEMTRANSPORT_H

#include "core/transport.h"

extern const tether__transport_ops tether__memt_ops;

/* Fault injection: ep's sends after the next `after` ones fail as if its process died: its own
 * call gets TETHER_ENET and every other rank of the world TETHER_EPEER. after < 0 turns it off. */
void tether__memt_fail_sends_after(tether__ep *ep, long after);

/* How many sends ep has posted to peer so far (what an algorithm sends, and to whom). */
long tether__memt_sent(tether__ep *ep, int peer);

/* The tag.seq of every collective (not point-to-point) message ep has sent, or'ed together. */
uint32_t tether__memt_seq_bits(tether__ep *ep);

/* What caps() reports for ep from now on. */
void tether__memt_set_caps(tether__ep *ep, unsigned caps);

#endif
