/* tools/netcmd_text.c - lines, networksetup and ifconfig text read into fields (netcmd_text.h).
 * Lines too long for the buffers are cut, not split, so a long line never becomes two. */
#include "tools/netcmd_text.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES 512

int tether__next_line(const char *text, size_t len, size_t *pos, char *buf, size_t buflen)
{
    size_t start = *pos, end = start;

    if (start >= len)
        return 0;
    while (end < len && text[end] != '\n')
        end++;
    snprintf(buf, buflen, "%.*s", (int)(end - start), text + start);
    *pos = end + 1;
    return 1;
}

int tether__hwport_next(const char *text, size_t len, size_t *pos, tether__hwport *port)
{
    char line[LINE_MAX_BYTES], after;

    port->name[0] = '\0';
    while (tether__next_line(text, len, pos, line, sizeof line)) {
        if (strncmp(line, "Hardware Port: ", 15) == 0) {
            snprintf(port->name, sizeof port->name, "%.*s", (int)sizeof port->name - 1, line + 15);
            continue;
        }
        /* A device line outside a block, an empty one or one too long names no interface. */
        if (strncmp(line, "Device: ", 8) != 0 || !port->name[0] || !line[8] ||
            strlen(line + 8) >= sizeof port->device)
            continue;
        memcpy(port->device, line + 8, strlen(line + 8) + 1);
        /* "Thunderbolt 1" is a port; "Thunderbolt Bridge" (bridge0) is not. */
        if (sscanf(port->name, "Thunderbolt %d%c", &port->receptacle, &after) != 1 ||
            port->receptacle < 1)
            port->receptacle = 0;
        return 1;
    }
    return 0;
}

/* "NAME: flags=..." starts an interface; any other unindented line ends the current one. */
static int ifc_header(const char *line, tether__ifc_line *l)
{
    size_t n = strcspn(line, ": \t");
    const char *mtu = strstr(line, " mtu ");

    l->iface[0] = '\0';
    if (n == 0 || n >= sizeof l->iface || line[n] != ':')
        return 0;
    snprintf(l->iface, sizeof l->iface, "%.*s", (int)n, line);
    l->kind = TETHER__IFC_IFACE;
    l->up = strstr(line, "<UP") != NULL;
    l->mtu = mtu ? atoi(mtu + 5) : 0;
    return 1;
}

/* "inet A netmask 0xM", or on a point-to-point link "inet A --> PEER netmask 0xM". */
static int ifc_inet(const char *t, tether__ifc_line *l)
{
    char a[64];
    const char *mask = strstr(t, " netmask 0x");
    struct in_addr in;

    if (sscanf(t, "inet %63s", a) != 1 || !mask || inet_pton(AF_INET, a, &in) != 1)
        return 0;
    l->kind = TETHER__IFC_INET;
    l->addr = ntohl(in.s_addr);
    l->mask = (uint32_t)strtoul(mask + 11, NULL, 16);
    return 1;
}

int tether__ifconfig_next(const char *text, size_t len, size_t *pos, tether__ifc_line *l)
{
    char line[LINE_MAX_BYTES];

    while (tether__next_line(text, len, pos, line, sizeof line)) {
        const char *t = line + strspn(line, " \t");
        if (!*t)
            continue;
        if (t == line) {
            if (ifc_header(line, l))
                return 1;
        } else if (!l->iface[0]) {
            continue;
        } else if (strncmp(t, "inet ", 5) == 0) {
            if (ifc_inet(t, l))
                return 1;
        } else if (sscanf(t, "member: %31s", l->member) == 1) {
            l->kind = TETHER__IFC_MEMBER;
            return 1;
        }
    }
    return 0;
}
