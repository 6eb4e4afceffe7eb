/* core/argcheck.c - the messages of the argument checks (argcheck.h holds the tests). */
#include <stdint.h>
#include <unistd.h>

#include "argcheck.h"
#include "errors.h"

int tether__bad_group(const char *call, const tether_group *g)
{
    if (!g)
        return tether__fail(TETHER_EINVAL, "%s: group is NULL; call tether_init first", call);
    return tether__fail(TETHER_EINVAL,
                        "%s: the group belongs to process %d and this is process %d, a fork "
                        "of it; a forked child cannot use its parent's groups",
                        call, (int)g->world->owner, (int)getpid());
}

int tether__bad_dtype(const char *call, tether_dtype dt)
{
    return tether__fail(TETHER_EINVAL, "%s: dtype %d is not a tether_dtype; expected 0..%d", call,
                        (int)dt, TETHER_DTYPE_COUNT - 1);
}

/* An op out of range, else one the dtype (checked before) lacks: complex64's max and min. */
int tether__bad_op(const char *call, tether_op op)
{
    if ((int)op < 0 || op >= TETHER_OP_COUNT)
        return tether__fail(TETHER_EINVAL,
                            "%s: op %d is not a tether_op; expected SUM, PROD, MAX or MIN", call,
                            (int)op);
    return tether__fail(TETHER_EINVAL,
                        "%s: op %s is not defined on complex64; expected sum or prod", call,
                        tether_op_name(op));
}

int tether__bad_buf(const char *call, const char *name, size_t count)
{
    return tether__fail(TETHER_EINVAL, "%s: %s is NULL with count %zu", call, name, count);
}

/* Out of range, else this rank itself where that is not allowed. */
int tether__bad_rank(const char *call, const char *name, int r, int size)
{
    if (r < 0 || r >= size)
        return tether__fail(TETHER_EINVAL, "%s: %s %d is out of range; the group has ranks 0..%d",
                            call, name, r, size - 1);
    return tether__fail(TETHER_EINVAL, "%s: %s %d is this rank itself", call, name, r);
}

int tether__bad_size(const char *call, size_t count, size_t mult)
{
    return tether__fail(TETHER_EINVAL, "%s: count %zu x %zu elements overflows the address space",
                        call, count, mult);
}

int tether__bad_overlap(const char *call, const void *send, size_t send_bytes, const void *recv,
                        size_t recv_bytes, const char *in_place_rule)
{
    return tether__fail(TETHER_EINVAL,
                        "%s: send [%p, +%zu bytes) and recv [%p, +%zu bytes) overlap; %s%s pass "
                        "buffers that do not overlap",
                        call, send, send_bytes, recv, recv_bytes,
                        in_place_rule ? in_place_rule : "this call does not run in place:",
                        in_place_rule ? ", or" : "");
}
