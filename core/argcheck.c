/* core/argcheck.c - the argument checks of every public call, in one place with one message shape.
 */
#include <stdint.h>
#include <unistd.h>

#include "argcheck.h"
#include "errors.h"
#include "group.h"
#include "reduce.h"

int tether__check_group(const char *call, const tether_group *g)
{
    if (!g)
        return tether__fail(TETHER_EINVAL, "%s: group is NULL; call tether_init first", call);
    if (!tether__group_owned(g))
        return tether__fail(TETHER_EINVAL,
                            "%s: the group belongs to process %d and this is process %d, a fork "
                            "of it; a forked child cannot use its parent's groups",
                            call, (int)g->world->owner, (int)getpid());
    return TETHER_OK;
}

int tether__check_dtype(const char *call, tether_dtype dt)
{
    if ((int)dt < 0 || dt >= TETHER_DTYPE_COUNT)
        return tether__fail(TETHER_EINVAL, "%s: dtype %d is not a tether_dtype; expected 0..%d",
                            call, (int)dt, TETHER_DTYPE_COUNT - 1);
    return TETHER_OK;
}

int tether__check_op(const char *call, tether_dtype dt, tether_op op)
{
    if ((int)op < 0 || op >= TETHER_OP_COUNT)
        return tether__fail(TETHER_EINVAL,
                            "%s: op %d is not a tether_op; expected SUM, PROD, MAX or MIN", call,
                            (int)op);
    if (!tether__op_valid(dt, op))
        return tether__fail(TETHER_EINVAL,
                            "%s: op %s is not defined on complex64; expected sum or prod", call,
                            tether_op_name(op));
    return TETHER_OK;
}

int tether__check_buf(const char *call, const char *name, const void *buf, size_t count)
{
    if (!buf && count > 0)
        return tether__fail(TETHER_EINVAL, "%s: %s is NULL with count %zu", call, name, count);
    return TETHER_OK;
}

int tether__check_rank(const char *call, const char *name, int r, int size, int self,
                       int allow_self)
{
    if (r < 0 || r >= size)
        return tether__fail(TETHER_EINVAL, "%s: %s %d is out of range; the group has ranks 0..%d",
                            call, name, r, size - 1);
    if (!allow_self && r == self)
        return tether__fail(TETHER_EINVAL, "%s: %s %d is this rank itself", call, name, r);
    return TETHER_OK;
}

int tether__check_size(const char *call, size_t count, size_t mult, size_t esize)
{
    if (count && (mult > SIZE_MAX / count || esize > SIZE_MAX / (count * mult)))
        return tether__fail(TETHER_EINVAL,
                            "%s: count %zu x %zu elements overflows the address space", call, count,
                            mult);
    return TETHER_OK;
}

int tether__check_overlap(const char *call, const void *send, size_t send_bytes, const void *recv,
                          size_t recv_bytes, int in_place, const char *in_place_rule)
{
    uintptr_t s = (uintptr_t)send, r = (uintptr_t)recv;
    if (in_place || !send_bytes || !recv_bytes || s + send_bytes <= r || r + recv_bytes <= s)
        return TETHER_OK;
    return tether__fail(TETHER_EINVAL,
                        "%s: send [%p, +%zu bytes) and recv [%p, +%zu bytes) overlap; %s%s pass "
                        "buffers that do not overlap",
                        call, send, send_bytes, recv, recv_bytes,
                        in_place_rule ? in_place_rule : "this call does not run in place:",
                        in_place_rule ? ", or" : "");
}
