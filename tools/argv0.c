/* tools/argv0.c - how this program was started, and its path (argv0.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/params.h"
#include "tools/argv0.h"

const char *tether__argv0 = "tether";

const char *tether__self_path(char *buf, size_t len)
{
    char cand[PATH_MAX], abs[PATH_MAX];
    const char *path = tether__env_raw("PATH");
    if (strchr(tether__argv0, '/')) {
        if (realpath(tether__argv0, abs) && snprintf(buf, len, "%s", abs) < (int)len)
            return buf;
        return "tether";
    }
    for (const char *d = path ? path : ""; *d;) {
        size_t n = strcspn(d, ":");
        if (snprintf(cand, sizeof cand, "%.*s/%s", (int)n, n ? d : ".", tether__argv0) <
                (int)sizeof cand &&
            access(cand, X_OK) == 0 && realpath(cand, abs) &&
            snprintf(buf, len, "%s", abs) < (int)len)
            return buf;
        d += n + (d[n] == ':');
    }
    return "tether";
}
