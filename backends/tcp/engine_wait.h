/* backends/tcp/engine_wait.h - waiting, and the progress thread's handler (engine_wait.c). */
#ifndef TETHER_TCP_ENGINE_WAIT_H
#define TETHER_TCP_ENGINE_WAIT_H

#include "engine_impl.h"

/* After poll: move bytes on every socket link that is ready. Caller holds ep->mu. */
void tether__tcp_progress_ready(tether__tcp_ep *ep, const struct pollfd *pfd);
/* Exchange the memory path's offers with every peer, before any other thread knows ep. */
int tether__tcp_negotiate(tether__tcp_ep *ep, int timeout_ms);

#endif
