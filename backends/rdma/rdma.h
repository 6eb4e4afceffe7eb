/* backends/rdma/rdma.h - the RDMA backend's exports: its ops for backends/table.c, and its rdma_cm
 * report for `tether check`. */
#ifndef TETHER_RDMA_H
#define TETHER_RDMA_H

#include "core/transport.h"

extern const tether__transport_ops tether__rdma_ops;

/* `tether check`: on Linux with a hostfile and no device matrix, one line per rank address of the
 * hostfile into out: the device, port, GID (and LID) rdma_cm picks to reach it, or why it cannot.
 * Empty where rdma_cm does not apply or cannot load (cm_report.c; stubs in absent.c, cm_absent.c).
 */
void tether__rdma_cm_report(const tether__config *cfg, char *out, size_t len);

#endif
