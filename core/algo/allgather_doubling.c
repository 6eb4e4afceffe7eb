/* core/algo/allgather_doubling.c - latency all-gather for small blocks: recursive doubling.
 *
 * For a power-of-two n. In round k every rank swaps with the rank whose number differs in bit k
 * the 2^k blocks it holds (those of its aligned group of 2^k ranks), each straight into its place
 * in recv: log2(n) rounds, one message each way per rank, where the direct algorithm sends n - 1
 * per rank at once. Through sockets every message is a system call and a trip through the
 * kernel's stack on shared cores, so at N = 4 the 8 messages of two rounds beat the direct
 * algorithm's 12, and partners swap over one connection, whose data carries the ACKs of the other
 * way (a Bruck-style shift, to one rank and from another, did not beat direct: every message
 * drew a bare ACK). The same bytes leave each rank as in the direct algorithm, (n - 1) blocks, but
 * the later rounds carry several blocks each, hence a size limit (core/algo/select.c). */
#include <string.h>

#include "core/algo/algo.h"

int tether__allgather_doubling(tether_group *g, const tether__coll *c)
{
    int me = g->rank;
    size_t block = c->count * c->esize;
    char *recv = c->recv;
    if (block && recv + (size_t)me * block != (const char *)c->send)
        memcpy(recv + (size_t)me * block, c->send, block);
    int rc = TETHER_OK;
    for (int k = 0, have = 1; rc == TETHER_OK && have < g->size; k++, have *= 2) {
        int partner = me ^ have, mine = me & ~(have - 1), theirs = partner & ~(have - 1);
        size_t bytes = (size_t)have * block;
        rc = tether__sendrecv(g, partner, recv + (size_t)mine * block, bytes, partner,
                              recv + (size_t)theirs * block, bytes, (uint32_t)(1 + k));
    }
    return tether__algo_abort(g, rc);
}
