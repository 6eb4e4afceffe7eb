/* launcher/check.h - `tether check`: what one machine has (check.c, check_net.c), and the
 * measured links between hosts (check_measure.c, run as the ranks of a launched job). */
#ifndef TETHER_LAUNCHER_CHECK_H
#define TETHER_LAUNCHER_CHECK_H

#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/log.h"
#include "tools/strbuf.h"

typedef struct tether__hostcheck_report {
    tether__strbuf text;     /* what this machine has, section by section */
    tether__strbuf problems; /* one "  - ..." line per problem */
    int nproblems;
} tether__hostcheck_report;

void tether__hostcheck_problem(tether__hostcheck_report *r, const char *fmt, ...)
    TETHER__PRINTF(2, 3);

/* Interfaces, Thunderbolt, the interface filter, RDMA devices and their problems. */
void tether__hostcheck_net(tether__hostcheck_report *r, const tether__config *cfg);

/* An IPv4 address of this machine, as the report lists it. */
typedef struct tether__hostcheck_addr {
    char iface[IF_NAMESIZE];
    uint32_t addr, mask; /* host byte order */
    int loopback, up;
    int thunderbolt;          /* a Thunderbolt port's interface (not the Thunderbolt Bridge) */
    char master[IF_NAMESIZE]; /* the bridge (or bond) it is a member of, "" when none */
} tether__hostcheck_addr;

/* macOS: set thunderbolt and master of each of a[n] from what `networksetup
 * -listallhardwareports` and `ifconfig -a` printed. Pure, so that every platform builds and tests
 * it; check_net.c runs the commands on macOS. */
void tether__hostcheck_macos_ports(tether__hostcheck_addr *a, int n, const char *hwports,
                                   const char *ifconfig);

/* The "interfaces (IPv4):" section, and a problem for each Thunderbolt interface in a bridge. */
void tether__hostcheck_interfaces(tether__hostcheck_report *r, const tether__config *cfg,
                                  const tether__hostcheck_addr *a, int n);

/* This machine's whole report: version, backends, network, environment, then its problems. */
void tether__hostcheck_local(tether__hostcheck_report *r);

/* A rank of `tether check --hosts/--hostfile`: its machine's report, then the group, then every
 * link measured with bytes per bandwidth transfer; rank 0 prints reports and matrices. Returns
 * the rank's exit status (non-zero on any problem). */
int tether__hostcheck_rank(size_t bytes);

#endif
