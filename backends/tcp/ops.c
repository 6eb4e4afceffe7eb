/* backends/tcp/ops.c - vtable-shaped calls over the engine, shared by the mesh and ring backends.
 */
#include "ops.h"

#include "engine.h"

/* The engine is the whole endpoint of these backends. */
static tether__tcp_ep *engine(tether_ep *ep)
{
    return (tether__tcp_ep *)ep;
}

int tether__tcp_op_isend(tether_ep *ep, int peer, const void *buf, size_t len, tether_tag tag,
                         tether_req **out)
{
    return tether__tcp_isend(engine(ep), peer, buf, len, tag, out);
}

int tether__tcp_op_irecv(tether_ep *ep, int peer, void *buf, size_t len, tether_tag tag,
                         tether_req **out)
{
    return tether__tcp_irecv(engine(ep), peer, buf, len, tag, out);
}

int tether__tcp_op_test(tether_ep *ep, tether_req *r, int *done)
{
    return tether__tcp_test(engine(ep), r, done);
}

int tether__tcp_op_wait(tether_ep *ep, int timeout_ms)
{
    return tether__tcp_wait(engine(ep), timeout_ms);
}

void tether__tcp_op_abort(tether_ep *ep, int code, const char *msg)
{
    tether__tcp_abort(engine(ep), code, msg);
}

int tether__tcp_op_alive(tether_ep *ep)
{
    return tether__tcp_alive(engine(ep));
}

uint64_t tether__tcp_op_moved(tether_ep *ep)
{
    return tether__tcp_moved_total(engine(ep));
}
