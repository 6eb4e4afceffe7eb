/* core/params_text.c - a row's default and accepted values in words, the one rendering that
 * `tether check` prints, tests/unit/test_config.c holds docs/env.md to and the accessors' errors
 * quote; and those accessors (the reading itself is params.c's). */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "errors.h"
#include "params.h"

void tether__param_default_text(const tether__param_row *r, char *buf, unsigned len)
{
    if (r->def_text)
        snprintf(buf, len, "%s", r->def_text);
    else if (r->type == TETHER__T_WORDS)
        snprintf(buf, len, "%s", r->words[r->def]);
    else if (r->type == TETHER__T_SECONDS)
        snprintf(buf, len, "%g", (double)r->def / 1000);
    else if (r->type == TETHER__T_TEXT || r->type == TETHER__T_PATH)
        snprintf(buf, len, "%s", "");
    else
        snprintf(buf, len, "%ld", r->def);
}

void tether__param_range_text(const tether__param_row *r, char *buf, unsigned len)
{
    size_t used = 0;
    buf[0] = '\0';
    switch (r->type) {
    case TETHER__T_TEXT:
    case TETHER__T_PATH:
        break;
    case TETHER__T_BOOL:
        snprintf(buf, len, "0 or 1");
        break;
    case TETHER__T_SECONDS:
        snprintf(buf, len, "%g to %g", (double)r->min / 1000, (double)r->max / 1000);
        break;
    case TETHER__T_WORDS: /* "a, b or c" */
        for (int i = 0; r->words[i] && used < len; i++) {
            const char *sep = i == 0 ? "" : r->words[i + 1] ? ", " : " or ";
            int n = snprintf(buf + used, len - used, "%s%s", sep, r->words[i]);
            used += n > 0 ? (size_t)n : 0;
        }
        break;
    case TETHER__T_LONG:
    case TETHER__T_BYTES:
        if (r->max == LONG_MAX)
            snprintf(buf, len, "%ld or more", r->min);
        else
            snprintf(buf, len, "%ld to %ld", r->min, r->max);
        break;
    }
}

/* Every row's names in words, built once: rows are constant, and a message may be worded on any
 * thread. */
static char names_text[TETHER__P_COUNT][160];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void names_fill(void)
{
    for (int id = 0; id < TETHER__P_COUNT; id++) {
        const tether__param_row *r = &tether__params[id];
        char *buf = names_text[id];
        size_t len = sizeof names_text[id], used = 0;
        used += (size_t)snprintf(buf, len, "%s", r->name);
        for (int k = 0; r->aliases[k] && used < len; k++) {
            const char *alias = r->aliases[k], *colon = strchr(alias, ':');
            int n = colon ? snprintf(buf + used, len - used, "%s%.*s with %s", k ? ", " : " (or ",
                                     (int)(colon - alias), alias, colon + 1)
                          : snprintf(buf + used, len - used, "%s%s", k ? ", " : " (or ", alias);
            used += n > 0 ? (size_t)n : 0;
        }
        if (r->aliases[0] && used < len)
            snprintf(buf + used, len - used, ")");
    }
}

const char *tether__param_names(tether__param id)
{
    pthread_once(&names_once, names_fill);
    return names_text[id];
}

/* TETHER_ECONFIG naming the variable the malformed text came from and what the row accepts. */
static int malformed(tether__param id, const char *text)
{
    const tether__param_row *r = &tether__params[id];
    const char *name = tether__param_from(id);
    char range[256];
    tether__param_range_text(r, range, sizeof range);
    switch (r->type) {
    case TETHER__T_WORDS:
        return tether__fail(TETHER_ECONFIG, "%s=\"%s\": expected %s (or unset)", name, text, range);
    case TETHER__T_SECONDS:
        return tether__fail(TETHER_ECONFIG,
                            "%s=\"%s\": expected seconds from %s, in plain decimal (e.g. 1 or 0.5)",
                            name, text, range);
    case TETHER__T_BYTES:
        return tether__fail(TETHER_ECONFIG,
                            "%s=\"%s\": expected a whole number of bytes%s%s, in plain decimal "
                            "digits",
                            name, text, r->max == LONG_MAX ? ", " : " from ", range);
    default:
        return tether__fail(TETHER_ECONFIG,
                            "%s=\"%s\": expected a whole number from %ld to %ld, in plain decimal "
                            "digits",
                            name, text, r->min, r->max);
    }
}

int tether__param_long(tether__param id, long *out)
{
    const char *text;
    int rc = tether__param_peek(id, out, &text);
    return rc < 0 ? malformed(id, text) : rc;
}

int tether__param_text(tether__param id, const char **out)
{
    const tether__param_row *r = &tether__params[id];
    long value;
    int rc = tether__param_peek(id, &value, out);
    if (rc < 0)
        return malformed(id, *out);
    if (rc == 0 && r->computed)
        *out = NULL;
    else if (rc == 0 && r->type == TETHER__T_WORDS)
        *out = r->words[r->def];
    else if (rc == 0)
        *out = r->def_text && r->def_text[0] ? r->def_text : NULL;
    return rc;
}
