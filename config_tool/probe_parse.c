/* config_tool/probe_parse.c - splitting a probe's output into sections, the text helpers the
 * macOS and Linux parsers share, and the dispatch between them. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tool/config_tool.h"

#define CT_MAX_SECTIONS 128
#define CT_MARK "@@tether "

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
static int split_sections(char *buf, ct_section *secs, int max)
{
    int n = 0;

    for (char *line = buf; *line;) {
        char *eol = strchr(line, '\n'), *next = eol ? eol + 1 : line + strlen(line), *sp;
        if (strncmp(line, CT_MARK, strlen(CT_MARK)) == 0) {
            if (n == max)
                return -1;
            if (line > buf)
                line[-1] = '\0'; /* ends the previous section's text */
            if (n > 0 && secs[n - 1].text == line)
                secs[n - 1].text = ""; /* it had none */
            if (eol)
                *eol = '\0';
            secs[n].name = line + strlen(CT_MARK);
            secs[n].arg = "";
            if ((sp = strchr(line + strlen(CT_MARK), ' '))) {
                *sp = '\0';
                secs[n].arg = sp + 1;
            }
            secs[n].text = next;
            n++;
        }
        line = next;
    }
    for (int i = 0; i < n; i++)
        secs[i].len = strlen(secs[i].text);
    return n;
}

/* Ports in receptacle order (macOS), else by interface name (Linux), so cables are listed and
 * numbered the same way on every run whatever order system_profiler lists its buses in. */
static int port_order(const void *a, const void *b)
{
    const ct_port *x = a, *y = b;

    if (x->receptacle != y->receptacle)
        return x->receptacle < y->receptacle ? -1 : 1;
    return strcmp(x->iface, y->iface);
}

int ct_probe_parse(ct_host *h, const char *out)
{
    ct_section secs[CT_MAX_SECTIONS];
    char *buf = strdup(out);
    const ct_section *os;
    int n, rc = -1;

    if (!buf) {
        snprintf(h->error, sizeof h->error, "out of memory reading the probe output");
        return -1;
    }
    n = split_sections(buf, secs, CT_MAX_SECTIONS);
    os = n > 0 ? ct_section_find(secs, n, "uname") : NULL;
    if (n < 0)
        snprintf(h->error, sizeof h->error, "probe output has more than %d sections",
                 CT_MAX_SECTIONS);
    else if (!os || !ct_section_find(secs, n, "end"))
        snprintf(h->error, sizeof h->error,
                 "probe output is %s (no \"@@tether %s\" line); is "
                 "sh on the host's PATH?",
                 n ? "truncated" : "missing", os ? "end" : "uname");
    else if (strncmp(os->text, "Darwin", 6) == 0)
        rc = ct_parse_macos(h, secs, n);
    else if (strncmp(os->text, "Linux", 5) == 0)
        rc = ct_parse_linux(h, secs, n);
    else
        snprintf(h->error, sizeof h->error, "runs \"%.*s\"; tether config knows macOS and Linux",
                 (int)strcspn(os->text, "\n"), os->text);
    if (rc == 0) {
        const ct_section *sudo = ct_section_find(secs, n, "sudo");
        qsort(h->ports, (size_t)h->nports, sizeof h->ports[0], port_order);
        h->sudo_ok = sudo && strncmp(sudo->text, "yes", 3) == 0;
    }
    free(buf);
    return rc;
}
