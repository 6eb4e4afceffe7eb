/* backends/rdma/cm.h - what the rdma_cm files share (cm.c connects, cm_report.c describes). */
#ifndef TETHER_RDMA_CM_H
#define TETHER_RDMA_CM_H

#include <netinet/in.h>

#include "hostfile/hostfile.h"
#include "rdma_impl.h"

/* rdma_resolve_addr and _route: as rdma-core's examples */
#define TETHER__RDMA_CM_RESOLVE_MS 2000

/* Every rank's first address in hostfile as an IPv4 socket address (a host name is looked up),
 * port 0: *hosts as read, *addr with hosts->nranks entries (the caller frees both, also on
 * failure). TETHER_ECONFIG naming the rank and the file. */
int tether__rdma_cm_addresses(const char *hostfile, tether__rank_hosts *hosts,
                              struct sockaddr_in **addr);
/* An event's status in words: -errno, or the IB CM's reject reason. */
const char *tether__rdma_cm_status(int status);

/* cm.c (cm_absent.c in builds without <rdma/rdma_cma.h>): the links through the RDMA connection
 * manager, when no device matrix is given (Linux). open: every link's device, pool and QP, each
 * QP at RTS, ep's side channels open. usable: 1, or 0 with why when librdmacm cannot load. */
int tether__rdma_cm_open(const tether__config *cfg, rdma_ep *ep, int64_t deadline_ms);
int tether__rdma_cm_usable(char *why, size_t why_len);
/* Disconnect and free every link's connection and QP, and the manager; before the devices go. */
void tether__rdma_cm_close(rdma_ep *ep);

#endif
