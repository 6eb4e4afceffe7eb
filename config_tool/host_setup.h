/* config_tool/host_setup.h - the commands that give each host its cable addresses, and
 * --auto-setup, which runs them (host_setup.c). */
#ifndef TETHER_CONFIG_TOOL_HOST_SETUP_H
#define TETHER_CONFIG_TOOL_HOST_SETUP_H

#include <stddef.h>

#include "config_tool/config_tool.h"

/* The commands host h needs (each run with sudo), one per line into buf; returns the count. */
int ct_setup_commands(const ct_run *run, int h, char *buf, size_t len);
/* --auto-setup: run the commands, then ping every used cable. 0 or -1 (printed why). */
int ct_auto_setup(ct_run *run);

#endif
