/* config_tool/topology.h - the cables between the hosts, the full-mesh check, the ring search and
 * the choice of backend (topology.c). */
#ifndef TETHER_CONFIG_TOOL_TOPOLOGY_H
#define TETHER_CONFIG_TOOL_TOPOLOGY_H

#include <stddef.h>

#include "config_tool/config_tool.h"

void ct_topology_build(ct_run *run);
/* Choose run->backend (and say why) from the options, the hosts and the topology. 0 or -1 with a
 * message printed. */
int ct_backend_choose(ct_run *run);
const char *ct_backend_name(ct_backend b);
/* The chosen backend as the hostfile names it (--format): MLX's names where mlx.launch has the
 * backend (ring; rdma as jaccl on a full mesh, jaccl-ring on a ring), which tether reads the same,
 * and "mesh" otherwise (--format mlx chose a ring instead); --format tether: tether's names. */
const char *ct_hostfile_backend(const ct_run *run);
/* "a -> b -> c -> a (3 of 4 hosts)", or "none". */
void ct_ring_text(const ct_run *run, char *buf, size_t len);

#endif
