/* core/errors.c - status codes, their texts, and the thread-local detailed message of the last
 * call. */
#include <stdarg.h>
#include <stdio.h>

#include "errors.h"
#include "log.h"

static _Thread_local char last_msg[TETHER__ERRMSG_MAX];
static _Thread_local int have_msg;

int tether__fail(int code, const char *fmt, ...)
{
    char msg[TETHER__ERRMSG_MAX];
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

/* Both from include/tether.h's one list of codes: a code cannot lack a text or a name. */
const char *tether_strerror(int status)
{
    switch (status) {
#define TETHER__TEXT_(name, value, text)                                                           \
    case TETHER_##name:                                                                            \
        return text;
        TETHER_STATUS_LIST(TETHER__TEXT_)
#undef TETHER__TEXT_
    }
    return "unknown status code";
}

const char *tether_err_name(int status)
{
    switch (status) {
#define TETHER__NAME_(name, value, text)                                                           \
    case TETHER_##name:                                                                            \
        return "TETHER_" #name;
        TETHER_STATUS_LIST(TETHER__NAME_)
#undef TETHER__NAME_
    }
    return "TETHER_E?";
}
