/* backends/tcp/ops.h - the message half of the transport vtable for backends whose endpoint is the
 * TCP engine itself (mesh, ring): the engine's calls with the vtable's types. */
#ifndef TETHER_TCP_OPS_H
#define TETHER_TCP_OPS_H

#include "core/transport.h"

int tether__tcp_op_isend(tether_ep *ep, int peer, const void *buf, size_t len, tether_tag tag,
                         tether_req **out);
int tether__tcp_op_irecv(tether_ep *ep, int peer, void *buf, size_t len, tether_tag tag,
                         tether_req **out);
int tether__tcp_op_test(tether_ep *ep, tether_req *r, int *done);
int tether__tcp_op_wait(tether_ep *ep, int timeout_ms);
void tether__tcp_op_abort(tether_ep *ep, int code, const char *msg);
uint64_t tether__tcp_op_moved(tether_ep *ep);
int tether__tcp_op_alive(tether_ep *ep);

#endif
