/* tools/say.c - one line on stderr for the user (say.h). */
#include <stdio.h>

#include "tools/say.h"

void tether__vsay(const char *who, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "%s: %s\n", who, msg);
}

void tether__say(const char *who, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tether__vsay(who, fmt, ap);
    va_end(ap);
}
