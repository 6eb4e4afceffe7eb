/* config_tool/results.h - what `tether config` hands back: the launcher hostfile, a Graphviz graph
 * of the cables, the plain summary (results.c). */
#ifndef TETHER_CONFIG_TOOL_RESULTS_H
#define TETHER_CONFIG_TOOL_RESULTS_H

#include "config_tool/config_tool.h"
#include "hostfile/hostfile.h"

/* The launcher hostfile for the chosen backend, in rank order. */
int ct_build_hostfile(const ct_run *run, tether__launch_hosts *out);
void ct_print_dot(const ct_run *run);
void ct_print_summary(const ct_run *run, int with_commands);
/* The setup commands per host, each prefixed with sudo (or "none" when all is set up). */
void ct_print_commands(const ct_run *run);
/* Rank order of the hosts for the chosen backend: ring order for ring, else as given. */
int ct_rank_order(const ct_run *run, int *order);

#endif
