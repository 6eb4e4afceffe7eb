/* backends/mesh/mesh.h - the full-mesh TCP backend's one export, for backends/table.c. */
#ifndef TETHER_MESH_H
#define TETHER_MESH_H

#include "core/transport.h"

extern const tether__transport_ops tether__mesh_ops;

#endif
