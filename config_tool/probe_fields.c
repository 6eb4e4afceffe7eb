/* config_tool/probe_fields.c - the text helpers the macOS and Linux probe parsers share: IPv4
 * addresses and masks, link rates, a host's interfaces and networks, a section by name. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tool/config_tool.h"
#include "config_tool/probe_fields.h"

int ct_parse_ipv4(const char *s, uint32_t *out)
{
    struct in_addr a;

    if (inet_pton(AF_INET, s, &a) != 1)
        return -1;
    *out = ntohl(a.s_addr);
    return 0;
}

void ct_format_ipv4(uint32_t a, char *buf, size_t len)
{
    snprintf(buf, len, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

int ct_mask_bits(uint32_t mask)
{
    int n = 0;

    for (; mask; mask <<= 1)
        n++;
    return n;
}

double ct_parse_gbps(const char *s)
{
    while (*s && !isdigit((unsigned char)*s))
        s++;
    return *s && strstr(s, "Gb/s") ? strtod(s, NULL) : 0;
}

uint32_t ct_prefix_mask(int bits)
{
    return bits <= 0 ? 0 : bits >= 32 ? 0xffffffffu : ~0u << (32 - bits);
}

ct_iface *ct_iface_get(ct_host *h, const char *name)
{
    for (int i = 0; i < h->nifaces; i++)
        if (strcmp(h->ifaces[i].name, name) == 0)
            return &h->ifaces[i];
    if (h->nifaces == CT_MAX_IFACES)
        return NULL;
    memset(&h->ifaces[h->nifaces], 0, sizeof h->ifaces[0]);
    snprintf(h->ifaces[h->nifaces].name, CT_IF_MAX, "%s", name);
    return &h->ifaces[h->nifaces++];
}

int ct_add_net(ct_net *nets, int *n, int max, const char *iface, uint32_t addr, uint32_t mask)
{
    if (*n == max)
        return -1;
    snprintf(nets[*n].iface, CT_IF_MAX, "%s", iface);
    nets[*n].addr = addr;
    nets[*n].mask = mask;
    (*n)++;
    return 0;
}

const ct_section *ct_section_find(const ct_section *secs, int nsecs, const char *name)
{
    for (int i = 0; i < nsecs; i++)
        if (strcmp(secs[i].name, name) == 0)
            return &secs[i];
    return NULL;
}

/* Cut buf (a copy of the output) at each marker line: every section's name, arg and text end up
 * NUL-terminated in place. Text before the first marker (a login banner) is skipped. */
