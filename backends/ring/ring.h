/* backends/ring/ring.h - the ring TCP backend's one export, for backends/table.c. */
#ifndef TETHER_RING_H
#define TETHER_RING_H

#include "core/transport.h"

extern const tether__transport_ops tether__ring_ops;

#endif
