/* core/log.c - leveled logging to stderr, "[tether r2/4 mesh]" prefix, one write per line. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "params.h"

static atomic_int level = -1; /* -1: not read from TETHER_VERBOSE yet */
static char identity[64] = "tether";
static pthread_mutex_t identity_lock =
    PTHREAD_MUTEX_INITIALIZER; /* worlds may open on any thread */

int tether__log_level(void)
{
    int l = atomic_load_explicit(&level, memory_order_relaxed);
    if (l < 0) {
        /* quiet: tether__fail logs, and a malformed value is reported by tether__config_load */
        l = (int)tether__param_quiet(TETHER__P_VERBOSE);
        atomic_store(&level, l);
    }
    return l;
}

void tether__log_identity(int rank, int size, const char *backend)
{
    pthread_mutex_lock(&identity_lock);
    snprintf(identity, sizeof identity, "tether r%d/%d %s", rank, size, backend);
    pthread_mutex_unlock(&identity_lock);
}

void tether__log(int lvl, const char *file, int line, const char *fmt, ...)
{
    static const char *const names[] = {"WARN", "INFO", "TRACE"};
    char buf[2048];
    pthread_mutex_lock(&identity_lock);
    int n = snprintf(buf, sizeof buf, "[%s] %s ", identity, names[lvl]);
    pthread_mutex_unlock(&identity_lock);
    va_list ap;
    va_start(ap, fmt);
    n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 64)
        n = (int)sizeof buf - 64;
    if (lvl == TETHER__LOG_TRACE)
        n += snprintf(buf + n, sizeof buf - (size_t)n, " (%s:%d)", file, line);
    else
        (void)file, (void)line;
    buf[n++] = '\n';
    /* one write() so lines from threads and ranks never interleave inside a line */
    ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
    (void)w;
}
