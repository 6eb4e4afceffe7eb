/* core/errors.c - status codes, their texts, and the thread-local detailed message of the last call. */
#include <stdarg.h>
#include <stdio.h>

#include "errors.h"
#include "log.h"

static _Thread_local char last_msg[TETHER_ERRMSG_MAX];
static _Thread_local int have_msg;

int tether__fail(int code, const char *fmt, ...)
{
    char msg[TETHER_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!have_msg) { /* the first failure is the deepest and most specific: keep it */
        snprintf(last_msg, sizeof last_msg, "%s", msg);
        have_msg = 1;
        TLOG_INFO("%s: %s", tether_err_name(code), msg);
    } else {
        TLOG_TRACE("also %s: %s", tether_err_name(code), msg);
    }
    return code;
}

void tether__clear_error(void)
{
    have_msg = 0;
    last_msg[0] = '\0';
}

int tether__has_error(void)
{
    return have_msg;
}

const char *tether_last_error(void)
{
    return last_msg;
}

/* A switch with no default, so -Wswitch-style review catches a code with no text (curl's rule). */
const char *tether_strerror(int status)
{
    switch (status) {
    case TETHER_OK: return "success";
    case TETHER_EINVAL: return "invalid argument";
    case TETHER_ECONFIG: return "malformed configuration";
    case TETHER_EUNAVAIL: return "backend not available";
    case TETHER_ENET: return "network error";
    case TETHER_ETIMEDOUT: return "timed out waiting for peers";
    case TETHER_EPEER: return "a peer failed or closed its connection";
    case TETHER_EMISMATCH: return "ranks called mismatched collectives";
    case TETHER_ENOMEM: return "out of memory";
    case TETHER_EINTERNAL: return "internal error";
    }
    return "unknown status code";
}

const char *tether_err_name(int status)
{
    switch (status) {
    case TETHER_OK: return "TETHER_OK";
    case TETHER_EINVAL: return "TETHER_EINVAL";
    case TETHER_ECONFIG: return "TETHER_ECONFIG";
    case TETHER_EUNAVAIL: return "TETHER_EUNAVAIL";
    case TETHER_ENET: return "TETHER_ENET";
    case TETHER_ETIMEDOUT: return "TETHER_ETIMEDOUT";
    case TETHER_EPEER: return "TETHER_EPEER";
    case TETHER_EMISMATCH: return "TETHER_EMISMATCH";
    case TETHER_ENOMEM: return "TETHER_ENOMEM";
    case TETHER_EINTERNAL: return "TETHER_EINTERNAL";
    }
    return "TETHER_E?";
}
