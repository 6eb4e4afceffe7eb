/* core/algo/select.h - which algorithm runs a call (core/algo/select.c). */
#ifndef TETHER_CORE_ALGO_SELECT_H
#define TETHER_CORE_ALGO_SELECT_H

#include "core/coll.h"

/* The one place a call's algorithm is chosen (core/algo/select.c): from TETHER_ALLREDUCE_ALGO,
 * TETHER_TREE_BELOW (parsed again only when the environment changed since this thread's last read),
 * the size and the transport's caps, into c->algo, and c's signature then (tether__signature) into
 * *sig. Both are kept in g's plan for c's kind and reused while the kind's next calls have the same
 * signed fields under the same settings. A malformed setting the call uses is TETHER_ECONFIG naming
 * the variable and the values it accepts, before anything is sent. */
int tether__algo_choose(tether_group *g, tether__coll *c, uint32_t *sig);
const char *tether__algo_name(tether__algo a);
/* Parse "auto|ring|tree|butterfly|direct|neighbor"; -1 if unknown. */
int tether__algo_parse(const char *s);
/* TETHER_ECONFIG naming the variable when TETHER_ALLREDUCE_ALGO or TETHER_TREE_BELOW is malformed
 * (tether_init checks both, so a job set up wrong fails before it forms), else TETHER_OK. */
int tether__algo_settings_check(void);

#endif
