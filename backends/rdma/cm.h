/* backends/rdma/cm.h - what the rdma_cm files share (cm.c connects, cm_report.c describes). */
#ifndef TETHER_RDMA_CM_H
#define TETHER_RDMA_CM_H

#include <netinet/in.h>

#include "hostfile/hostfile.h"

#define TETHER_RDMA_CM_RESOLVE_MS 2000 /* rdma_resolve_addr and _route: as rdma-core's examples */

/* Every rank's first address in hostfile as an IPv4 socket address (a host name is looked up),
 * port 0: *hosts as read, *addr with hosts->nranks entries (the caller frees both, also on
 * failure). TETHER_ECONFIG naming the rank and the file. */
int tether__rdma_cm_addresses(const char *hostfile, tether_rank_hosts *hosts,
                              struct sockaddr_in **addr);
/* An event's status in words: -errno, or the IB CM's reject reason. */
const char *tether__rdma_cm_status(int status);

#endif
