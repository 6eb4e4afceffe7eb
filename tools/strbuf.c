/* tools/strbuf.c - growable strings, and quoting for POSIX sh (commands sent over ssh). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/strbuf.h"

static void grow(tether__strbuf *b, size_t more)
{
    size_t cap = b->cap ? b->cap : 256;
    char *s;
    if (b->failed || b->len + more + 1 <= b->cap)
        return;
    while (cap < b->len + more + 1)
        cap *= 2;
    if (!(s = realloc(b->s, cap))) {
        b->failed = 1;
        return;
    }
    b->s = s;
    b->cap = cap;
}

void tether__sb_add(tether__strbuf *b, const char *text)
{
    size_t n = strlen(text);
    grow(b, n);
    if (b->failed)
        return;
    memcpy(b->s + b->len, text, n + 1);
    b->len += n;
}

void tether__sb_addf(tether__strbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    grow(b, n > 0 ? (size_t)n : 0);
    if (b->failed || n <= 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* 'text' with every ' written as '\'' : sh takes everything between single quotes literally, so
 * spaces, $, `, ", \ and newlines survive. */
void tether__sb_add_quoted(tether__strbuf *b, const char *text)
{
    tether__sb_add(b, "'");
    for (const char *q; (q = strchr(text, '\'')); text = q + 1) {
        tether__sb_addf(b, "%.*s'\\''", (int)(q - text), text);
    }
    tether__sb_add(b, text);
    tether__sb_add(b, "'");
}

char *tether__sb_take(tether__strbuf *b, const char *what)
{
    char *s = b->failed ? NULL : b->s;
    if (b->failed) {
        free(b->s);
        tether__say("tether", "out of memory building %s", what);
    }
    memset(b, 0, sizeof *b);
    return s;
}
