/* config_tool/probe_fields.h - the text helpers the macOS and Linux probe parsers share: the
 * probe's sections, IPv4 addresses and masks, link rates, a host's interfaces and networks
 * (probe_fields.c). */
#ifndef TETHER_CONFIG_TOOL_PROBE_FIELDS_H
#define TETHER_CONFIG_TOOL_PROBE_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "config_tool/config_tool.h"

/* Sections of the probe output, by name (NULL when absent). */
typedef struct ct_section {
    const char *name, *arg; /* "@@tether NAME ARG" */
    const char *text;
    size_t len;
} ct_section;

const ct_section *ct_section_find(const ct_section *secs, int nsecs, const char *name);

/* Shared text helpers. */
int ct_parse_ipv4(const char *s, uint32_t *out);        /* 0 or -1 */
void ct_format_ipv4(uint32_t a, char *buf, size_t len); /* buf >= 16 */
int ct_mask_bits(uint32_t mask);
uint32_t ct_prefix_mask(int bits);                    /* 24 -> 0xffffff00 */
double ct_parse_gbps(const char *s);                  /* "80 Gb/s" -> 80; 0 when none */
ct_iface *ct_iface_get(ct_host *h, const char *name); /* found or added; NULL when full */
int ct_add_net(ct_net *nets, int *n, int max, const char *iface, uint32_t addr, uint32_t mask);

#endif
