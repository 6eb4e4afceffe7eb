/* config_tool/linux_sysfs.h - reading a Linux host's probe sections (linux_sysfs.c). */
#ifndef TETHER_CONFIG_TOOL_LINUX_SYSFS_H
#define TETHER_CONFIG_TOOL_LINUX_SYSFS_H

#include "config_tool/config_tool.h"
#include "config_tool/probe_fields.h"

int ct_parse_linux(ct_host *h, const ct_section *secs, int nsecs);

#endif
