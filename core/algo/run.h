/* core/algo/run.h - running a call on the algorithm chosen for it (core/algo/run.c). */
#ifndef TETHER_CORE_ALGO_RUN_H
#define TETHER_CORE_ALGO_RUN_H

#include "core/coll.h"

/* Run a checked collective whose algorithm is chosen on a group of size >= 2: call it. */
int tether__coll_run(tether_group *g, const tether__coll *c);

#endif
