/* backends/net/bootstrap.h - forming the rank table without a hostfile, through a coordinator.
 *
 * TETHER_COORDINATOR=host:port, TETHER_RANK, TETHER_SIZE. Every rank listens on the local address
 * that routes to the coordinator (port chosen by the kernel). Rank 0 also listens on the
 * coordinator address; the others connect to it (retrying until the timeout), pass the usual
 * handshake (job token, size) and announce their listen address; rank 0 sends everyone the table.
 * The result is the table a per-rank hostfile gives, one address per rank. */
#ifndef TETHER_NET_BOOTSTRAP_H
#define TETHER_NET_BOOTSTRAP_H

#include "core/config.h"
#include "hostfile/hostfile.h"

/* On success *table has cfg->size ranks and *listen_fd is this rank's listening socket, the one
 * its table entry names (the caller closes it). ECONFIG for missing or malformed variables. */
int tether__net_bootstrap(const tether__config *cfg, tether__rank_hosts *table, int *listen_fd);

#endif
