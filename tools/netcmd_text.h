/* tools/netcmd_text.h - reading what network commands print, as pure functions over the text:
 * lines, and macOS's `networksetup -listallhardwareports` and `ifconfig`. Every platform compiles
 * and unit-tests them (tests/unit/test_netcmd_text.c); only running the commands is platform code.
 * `tether check` (check_net.c) and `tether config`'s probe (config_tool/macos.c) both read macOS
 * hosts through them. */
#ifndef TETHER_TOOLS_NETCMD_TEXT_H
#define TETHER_TOOLS_NETCMD_TEXT_H

#include <stddef.h>
#include <stdint.h>

#define TETHER__IFNAME_MAX 32

/* Copy the line at text[*pos] (text is len bytes) into buf without its newline, cut to fit, and
 * move *pos past it. Returns 0 at the end of the text. */
int tether__next_line(const char *text, size_t len, size_t *pos, char *buf, size_t buflen);

/* One block of networksetup -listallhardwareports: "Hardware Port: Thunderbolt 1", then
 * "Device: en2" (then "Ethernet Address: ...", not kept). */
typedef struct tether__hwport {
    char name[48];                   /* "Thunderbolt 1", "Thunderbolt Bridge", "Wi-Fi" */
    char device[TETHER__IFNAME_MAX]; /* "en2" */
    int receptacle;                  /* N of "Thunderbolt N"; 0 for every other port */
} tether__hwport;

/* The next port that names its device, read from text[*pos]. 1, or 0 at the end. */
int tether__hwport_next(const char *text, size_t len, size_t *pos, tether__hwport *port);

typedef enum {
    TETHER__IFC_IFACE = 1, /* "en2: flags=8863<UP,...> mtu 1500" */
    TETHER__IFC_INET,      /* "\tinet 10.0.0.1 [--> 10.0.0.2] netmask 0xfffffffc ..." */
    TETHER__IFC_MEMBER     /* "\tmember: en2 flags=3<LEARNING,DISCOVER>" (in a bridge) */
} tether__ifc_kind;

/* A line of ifconfig that tether reads, with the interface it belongs to. */
typedef struct tether__ifc_line {
    tether__ifc_kind kind;
    char iface[TETHER__IFNAME_MAX];  /* the interface of the latest "NAME: flags=" line */
    int up, mtu;                     /* IFACE: UP among its flags; its mtu, 0 when not shown */
    uint32_t addr, mask;             /* INET: host byte order */
    char member[TETHER__IFNAME_MAX]; /* MEMBER: the bridge member */
} tether__ifc_line;

/* The next such line, read from text[*pos]; line is zeroed before the first call and carries
 * the current interface from call to call. 1, or 0 at the end. */
int tether__ifconfig_next(const char *text, size_t len, size_t *pos, tether__ifc_line *line);

#endif
