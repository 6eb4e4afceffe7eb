/* backends/tcp/engine_ctrl.h - control frames: abort and bye (engine_ctrl.c). */
#ifndef TETHER_TCP_ENGINE_CTRL_H
#define TETHER_TCP_ENGINE_CTRL_H

#include "engine_impl.h"

/* Send every peer a bye (a normal close). Caller holds ep->mu. */
void tether__tcp_say_bye(tether__tcp_ep *ep);

#endif
