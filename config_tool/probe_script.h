/* config_tool/probe_script.h - the shell script each host runs once to be probed (probe_script.c).
 */
#ifndef TETHER_CONFIG_TOOL_PROBE_SCRIPT_H
#define TETHER_CONFIG_TOOL_PROBE_SCRIPT_H

/* The shell command line the remote host runs (wrapped for sh, whatever the login shell). */
const char *ct_probe_command(void);

#endif
