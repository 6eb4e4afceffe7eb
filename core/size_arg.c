/* core/size_arg.c - byte sizes given as arguments, one rule for every command (size_arg.h). */
#include "core/size_arg.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#define EXPECTED                                                                                   \
    "expected a whole number of bytes, optionally followed by K, M, G or T (x1024 each) and B, "   \
    "such as 8, 64K or 1MB"

/* The power of 1024 a unit letter stands for; -1 when c is none. */
static int unit_shift(char c)
{
    switch (c) {
    case 'K':
    case 'k':
        return 10;
    case 'M':
    case 'm':
        return 20;
    case 'G':
    case 'g':
        return 30;
    case 'T':
    case 't':
        return 40;
    default:
        return -1;
    }
}

static int not_a_size(const char *what, const char *text, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: '%s' is not a size; %s", what, text, EXPECTED);
    return -1;
}

int tether__size_parse(const char *what, const char *text, size_t *out, char *err, size_t errlen)
{
    if (!text || !*text) {
        snprintf(err, errlen, "%s: empty size; %s", what, EXPECTED);
        return -1;
    }
    if (*text == '-') {
        snprintf(err, errlen, "%s: '%s' is negative; %s", what, text, EXPECTED);
        return -1;
    }
    /* Digits by hand, not strtoull: it would take a sign and leading spaces, and wrap "-1". */
    const char *p = text;
    unsigned long long v = 0;
    int overflow = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        overflow |= v > (ULLONG_MAX - d) / 10;
        v = v * 10 + d; /* wraps only once overflow is set, and then v is not used */
    }
    if (p == text)
        return not_a_size(what, text, err, errlen);
    int shift = unit_shift(*p);
    if (shift > 0)
        p++;
    else
        shift = 0;
    if (*p == 'B' || *p == 'b')
        p++;
    if (*p)
        return not_a_size(what, text, err, errlen);
    if (overflow || v > (unsigned long long)SIZE_MAX >> shift) {
        snprintf(err, errlen, "%s: '%s' is too large (at most %zu bytes)", what, text,
                 (size_t)SIZE_MAX);
        return -1;
    }
    *out = (size_t)(v << shift);
    return 0;
}
