/* core/argcheck.h - every argument check of the public API, one message shape:
 * "<call>: <argument> <problem>; <what was expected>". All return TETHER_EINVAL or TETHER_OK.
 *
 * Each check is its test, inline, and its message, out of line (argcheck.c): a collective runs up
 * to seven, and as calls (arguments moved, called, returned, tested) they cost an 8 B all-reduce
 * about 80 instructions more than their tests. */
#ifndef TETHER_CORE_ARGCHECK_H
#define TETHER_CORE_ARGCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "group.h"
#include "reduce.h"
#include "tether.h"

/* The failures: each records its message (tether__fail) and returns TETHER_EINVAL. */
int tether__bad_group(const char *call, const tether_group *g);
int tether__bad_dtype(const char *call, tether_dtype dt);
int tether__bad_op(const char *call, tether_op op);
int tether__bad_buf(const char *call, const char *name, size_t count);
int tether__bad_rank(const char *call, const char *name, int r, int size); /* or this rank */
int tether__bad_overlap(const char *call, const void *send, size_t send_bytes, const void *recv,
                        size_t recv_bytes, const char *in_place_rule);
int tether__bad_size(const char *call, size_t count, size_t mult);

/* g is a group this process may use: not NULL, not a forked child's copy. */
static inline int tether__check_group(const char *call, const tether_group *g)
{
    return g && tether__group_owned(g) ? TETHER_OK : tether__bad_group(call, g);
}

static inline int tether__check_dtype(const char *call, tether_dtype dt)
{
    return (int)dt >= 0 && dt < TETHER_DTYPE_COUNT ? TETHER_OK : tether__bad_dtype(call, dt);
}

/* op is a tether_op defined on dt. */
static inline int tether__check_op(const char *call, tether_dtype dt, tether_op op)
{
    return tether__op_valid(dt, op) ? TETHER_OK : tether__bad_op(call, op);
}

/* buf may be NULL only when count is 0. */
static inline int tether__check_buf(const char *call, const char *name, const void *buf,
                                    size_t count)
{
    return buf || count == 0 ? TETHER_OK : tether__bad_buf(call, name, count);
}

/* rank in [0, size); self allowed or not. */
static inline int tether__check_rank(const char *call, const char *name, int r, int size, int self,
                                     int allow_self)
{
    return r >= 0 && r < size && (allow_self || r != self) ? TETHER_OK
                                                           : tether__bad_rank(call, name, r, size);
}

/* send (send_bytes) and recv (recv_bytes) do not overlap, unless in_place (the caller found them
 * where the call runs in place; in_place_rule says where that is, NULL when it never does): any
 * other overlap would read elements the call has already overwritten. */
static inline int tether__check_overlap(const char *call, const void *send, size_t send_bytes,
                                        const void *recv, size_t recv_bytes, int in_place,
                                        const char *in_place_rule)
{
    uintptr_t s = (uintptr_t)send, r = (uintptr_t)recv;
    if (in_place || !send_bytes || !recv_bytes || s + send_bytes <= r || r + recv_bytes <= s)
        return TETHER_OK;
    return tether__bad_overlap(call, send, send_bytes, recv, recv_bytes, in_place_rule);
}

/* count * mult elements of esize bytes must fit in size_t. */
static inline int tether__check_size(const char *call, size_t count, size_t mult, size_t esize)
{
    if (count && (mult > SIZE_MAX / count || esize > SIZE_MAX / (count * mult)))
        return tether__bad_size(call, count, mult);
    return TETHER_OK;
}

#endif
