/* config_tool/probe_parse.c - splitting a probe's output into sections and handing them to the
 * macOS or the Linux parser (macos.c, linux_sysfs.c), which read them with probe_fields.c. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tool/config_tool.h"
#include "config_tool/linux_sysfs.h"
#include "config_tool/macos.h"
#include "config_tool/probe_fields.h"
#include "config_tool/probe_parse.h"

#define CT_MAX_SECTIONS 128
#define CT_MARK "@@tether "

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
