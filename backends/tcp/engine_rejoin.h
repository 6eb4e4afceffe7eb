/* backends/tcp/engine_rejoin.h - the thread that dials lanes that left again (engine_rejoin.c). */
#ifndef TETHER_TCP_ENGINE_REJOIN_H
#define TETHER_TCP_ENGINE_REJOIN_H

#include "engine_impl.h"

/* Stop the rejoin thread, without ep->mu held (close). */
void tether__tcp_rejoin_stop(tether__tcp_ep *ep);

#endif
