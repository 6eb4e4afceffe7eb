/* core/argcheck.h - every argument check of the public API, one message shape:
 * "<call>: <argument> <problem>; <what was expected>". All return TETHER_EINVAL or TETHER_OK. */
#ifndef TETHER_CORE_ARGCHECK_H
#define TETHER_CORE_ARGCHECK_H

#include <stddef.h>

#include "tether.h"

int tether__check_group(const char *call, const tether_group *g);
int tether__check_dtype(const char *call, tether_dtype dt);
int tether__check_op(const char *call, tether_dtype dt, tether_op op);
/* buf may be NULL only when count is 0. */
int tether__check_buf(const char *call, const char *name, const void *buf, size_t count);
/* rank in [0, size); self allowed or not. */
int tether__check_rank(const char *call, const char *name, int r, int size, int self,
                       int allow_self);
/* send (send_bytes) and recv (recv_bytes) do not overlap, unless in_place (the caller found them
 * where the call runs in place; in_place_rule says where that is, NULL when it never does): any
 * other overlap would read elements the call has already overwritten. */
int tether__check_overlap(const char *call, const void *send, size_t send_bytes, const void *recv,
                          size_t recv_bytes, int in_place, const char *in_place_rule);
/* count * mult elements of esize bytes must fit in size_t. */
int tether__check_size(const char *call, size_t count, size_t mult, size_t esize);

#endif
