/* launcher/check.h - `tether check`: what one machine has (check.c, check_net.c), and the
 * measured links between hosts (check_measure.c, run as the ranks of a launched job). */
#ifndef TETHER_LAUNCHER_CHECK_H
#define TETHER_LAUNCHER_CHECK_H

#include <stddef.h>

#include "core/config.h"
#include "launch.h"

typedef struct tether__hostcheck_report {
    tether__strbuf text;     /* what this machine has, section by section */
    tether__strbuf problems; /* one "  - ..." line per problem */
    int nproblems;
} tether__hostcheck_report;

void tether__hostcheck_problem(tether__hostcheck_report *r, const char *fmt, ...)
    TETHER_PRINTF(2, 3);

/* Interfaces, Thunderbolt, the interface filter, RDMA devices and their problems. */
void tether__hostcheck_net(tether__hostcheck_report *r, const tether_config *cfg);

/* This machine's whole report: version, backends, network, environment, then its problems. */
void tether__hostcheck_local(tether__hostcheck_report *r);

/* A rank of `tether check --hosts/--hostfile`: its machine's report, then the group, then every
 * link measured with bytes per bandwidth transfer; rank 0 prints reports and matrices. Returns
 * the rank's exit status (non-zero on any problem). */
int tether__hostcheck_rank(size_t bytes);

#endif
