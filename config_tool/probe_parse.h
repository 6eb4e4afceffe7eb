/* config_tool/probe_parse.h - a probe's output into a ct_host (probe_parse.c). */
#ifndef TETHER_CONFIG_TOOL_PROBE_PARSE_H
#define TETHER_CONFIG_TOOL_PROBE_PARSE_H

#include "config_tool/config_tool.h"

/* Parse a probe's output into h (h->name set). 0, or -1 with h->error set. */
int ct_probe_parse(ct_host *h, const char *out);

#endif
