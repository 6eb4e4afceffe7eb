/* config_tool/macos.h - reading a macOS host's probe sections (macos.c). */
#ifndef TETHER_CONFIG_TOOL_MACOS_H
#define TETHER_CONFIG_TOOL_MACOS_H

#include <stdint.h>

#include "config_tool/config_tool.h"
#include "config_tool/probe_fields.h"

int ct_parse_macos(ct_host *h, const ct_section *secs, int nsecs);
/* A destination as macOS's netstat -rn prints it, host being whether its flags have H: the
 * address without its trailing zero octets, and no mask when it is the address's class mask
 * (netstat.tproj/route.c, netname and domask): "10.8/16" is 10.8.0.0/16, "192.168.50"
 * 192.168.50.0/24, "127" 127.0.0.0/8, "224.0.0/4" 224.0.0.0/4; "10.1&0xffff00ff" has a
 * non-contiguous mask. 0, or -1 when s is none of these. */
int ct_parse_bsd_dest(const char *s, int host, uint32_t *net, uint32_t *mask);

#endif
