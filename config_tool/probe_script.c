/* config_tool/probe_script.c - the shell script each host runs once: everything the tool needs,
 * in sections marked "@@tether NAME [ARG]". Only read-only commands; nothing is changed. */
#include "config_tool/probe_script.h"

/* Kept free of single quotes so it can be wrapped in '...' for sh -c. The remote login shell may
 * be zsh (the macOS default), so the script always runs under sh. Each marker starts on a fresh
 * line even when the command before it ended without a newline (truncated JSON is then reported
 * as such). TETHER_SYSFS_ROOT lets the tests hand a Linux host a fixture tree in place of /sys. */
#define PROBE_SCRIPT                                                                               \
    "R=\"${TETHER_SYSFS_ROOT:-/sys}\"; "                                                           \
    "s() { echo; echo \"@@tether $*\"; }; "                                                        \
    "s uname; uname -s; "                                                                          \
    "case \"$(uname -s)\" in "                                                                     \
    "Darwin) "                                                                                     \
    "s version; sw_vers -productVersion; "                                                         \
    "s model; sysctl -n hw.model; "                                                                \
    "s thunderbolt; system_profiler SPThunderboltDataType -json; "                                 \
    "s ports; networksetup -listallhardwareports; "                                                \
    "s ifconfig; ifconfig; "                                                                       \
    "s netstat; netstat -rn -f inet; "                                                             \
    "s ibv_devices; ibv_devices 2>&1; "                                                            \
    "s rdma_ctl; rdma_ctl status 2>&1; "                                                           \
    "networksetup -listallhardwareports | while read -r k v; do "                                  \
    "[ \"$k\" = Device: ] && a=$(ipconfig getifaddr \"$v\" 2>/dev/null) && s getifaddr \"$v\" "    \
    "\"$a\"; done;; "                                                                              \
    "Linux) "                                                                                      \
    "s version; uname -r; "                                                                        \
    "s ipaddr; ip -4 -o addr show; "                                                               \
    "s iproute; ip -4 route show; "                                                                \
    "for n in \"$R\"/class/net/*; do "                                                             \
    "d=$(readlink -f \"$n/device/driver\" 2>/dev/null) || continue; "                              \
    "[ \"${d##*/}\" = thunderbolt-net ] || continue; "                                             \
    "x=$(readlink -f \"$n/device\"); x=${x%/*}; xd=${x##*/}; "                                     \
    "s tbnet \"${n##*/}\"; "                                                                       \
    "echo \"local=$(cat \"$R/bus/thunderbolt/devices/${xd%%-*}-0/unique_id\" 2>/dev/null)\"; "     \
    "echo \"remote=$(cat \"$x/unique_id\" 2>/dev/null)\"; "                                        \
    "for f in rx_speed rx_lanes tx_speed tx_lanes; do "                                            \
    "echo \"$f=$(cat \"$x/$f\" 2>/dev/null)\"; done; "                                             \
    "echo \"mtu=$(cat \"$n/mtu\" 2>/dev/null)\"; "                                                 \
    "echo \"operstate=$(cat \"$n/operstate\" 2>/dev/null)\"; "                                     \
    "done;; "                                                                                      \
    "esac; "                                                                                       \
    "s sudo; if sudo -n true 2>/dev/null; then echo yes; else echo no; fi; "                       \
    "s end"

const char *ct_probe_command(void)
{
    return "sh -c '" PROBE_SCRIPT "'";
}
