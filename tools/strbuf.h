/* tools/strbuf.h - growable strings, and quoting for POSIX sh (commands sent over ssh), for the
 * tether command's subcommands (tools/strbuf.c). */
#ifndef TETHER_TOOLS_STRBUF_H
#define TETHER_TOOLS_STRBUF_H

#include <stddef.h>

#include "tools/say.h"

typedef struct tether__strbuf {
    char *s; /* NUL-terminated once anything was added */
    size_t len, cap;
    int failed; /* out of memory: later adds do nothing, take returns NULL */
} tether__strbuf;

void tether__sb_add(tether__strbuf *b, const char *text);
void tether__sb_addf(tether__strbuf *b, const char *fmt, ...) TETHER__SAY_PRINTF(2, 3);
/* text as one POSIX sh word, in single quotes. */
void tether__sb_add_quoted(tether__strbuf *b, const char *text);
/* The string (caller frees), or NULL after saying "tether: out of memory building <what>". */
char *tether__sb_take(tether__strbuf *b, const char *what);

#endif
