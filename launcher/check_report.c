/* launcher/check_report.c - a host's report of tether check: its problems, one line each (check.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "check.h"
#include "tools/strbuf.h"

void tether__hostcheck_problem(tether__hostcheck_report *r, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    tether__sb_addf(&r->problems, "  - %s\n", line);
    r->nproblems++;
}
