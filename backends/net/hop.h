/* backends/net/hop.h - ring routing: the neighbour a message to a rank with no link goes through.
 *
 * The TCP ring (backends/ring) and RDMA's ring mode link each rank to its two neighbours only and
 * pass every other message on, rank by rank; both must pick the same way round at every rank, so
 * the rule lives here once. */
#ifndef TETHER_NET_HOP_H
#define TETHER_NET_HOP_H

/* The neighbour of rank (in a ring of size ranks) towards dst: dst itself when it is a neighbour,
 * else the shorter way round; at equal distance clockwise when rank is the lower, so a pair's two
 * directions share one path. */
int tether__net_next_hop(int rank, int size, int dst);

#endif
