/* config_tool/config_say.h - how `tether config` and `tether hostfile` report: their messages on
 * stderr and the statuses they exit with. */
#ifndef TETHER_CONFIG_TOOL_CONFIG_SAY_H
#define TETHER_CONFIG_TOOL_CONFIG_SAY_H

#include "tools/say.h"

/* Status of the command: 0 done, 1 failed (hosts, topology, setup), 2 bad command line. */
#define CT_EXIT_FAILED 1
#define CT_EXIT_USAGE 2

/* ---- messages: "tether config: ..." on stderr (tools/say.h); ct_verbose only with --verbose ----
 */
#define ct_say(...) tether__say("tether config", __VA_ARGS__)
#define ct_verbose(o, ...)                                                                         \
    do {                                                                                           \
        if ((o)->verbose)                                                                          \
            tether__say("tether config", __VA_ARGS__);                                             \
    } while (0)

#endif
