/* core/registry.h - the backends of backends/table.c as core hands them out (core/registry.c): by
 * name, by index with their defaults filled, and whether one is ready to run here. */
#ifndef TETHER_CORE_REGISTRY_H
#define TETHER_CORE_REGISTRY_H

#include <stddef.h>

#include "config.h"
#include "transport.h"

/* The backend a name given to tether_init or TETHER_BACKEND means ("any", "singleton", a name in
 * backends/table.c or one of its aliases there: MLX's "jaccl" and "jaccl-ring" are "rdma"), or NULL
 * when it names none. The launcher, `tether config` and the hostfile reader take the same names. */
const char *tether__backend_canonical(const char *name);
/* The accepted names, for messages, in the table's order (backends/table.c):
 * "any, mpi, rdma (or jaccl, jaccl-ring), mesh, ring or singleton". */
const char *tether__backend_names(void);

/* The defaults of the optional members, filled once (core/registry.c): ops with usable, moved and
 * comm_free set to what their NULL means above wherever the backend left them NULL, so their
 * callers never test them. run, split, alive and probe stay as the backend set them: their NULL
 * chooses another way of working (core's algorithms, core's split, no heartbeats) or says a feature
 * is missing (no any-source receives), tested where it matters.
 * The registry hands out only such copies; a test's own transport is filled with this too. */
void tether__transport_defaults(tether__transport_ops *ops);

/* Backend i of tether__backends with its defaults filled; NULL past the end. */
const tether__transport_ops *tether__backend_at(int i);

/* How ready backend ops (from tether__backend_at) is: 1 when cfg configures it and it can run here,
 * 0 when cfg does not configure it, -1 when it does but the backend cannot run here (its library
 * does not load); why says why not, or what usable() found. The configuration is asked first, so a
 * backend nobody configured loads nothing (the MPI plugin only under mpirun). */
int tether__backend_ready(const tether__transport_ops *ops, const tether__config *cfg, char *why,
                          size_t why_len);

#endif
