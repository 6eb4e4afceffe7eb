/* core/params.c - the one reader of libtether's settings (core/params.h): each row's variable and
 * aliases found in the environment, parsed and checked against the row, and cached per thread
 * until the environment changes.
 *
 * Why a cache that watches the environment rather than one read at tether_init: the algorithm
 * settings are read at every call (a program may change them between calls), and two getenv calls
 * were a fifth of a small all-reduce's instructions (docs/tuning.md). setenv and putenv give a
 * changed variable a new entry string, add a new one at the end, and unsetenv closes the gap, so
 * the array, its length, its last entry and a setting's own entries all unchanged mean an
 * unchanged setting: a read costs a few loads. (A string given to putenv and then changed in place
 * keeps its entry: tether__params_reload, which tether_init calls, makes every thread read again.)
 * Per thread, so threads never share a cache line or a lock.
 *
 * It records no error (params_text.c words those), so the logger, which the error path calls, may
 * read its level here. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "platform.h"

#define NAMES (1 + TETHER__PARAM_ALIASES)

/* Where the environment was when this thread last looked. */
typedef struct env_mark {
    char **env;       /* the array */
    size_t count;     /* its entries */
    const char *last; /* its last entry */
    unsigned reloads; /* tether__params_reload's count then */
    unsigned epoch;   /* bumped when any of the above changes; 0: never looked */
} env_mark;

/* One setting as this thread last read it. */
typedef struct slot {
    unsigned epoch;           /* the mark's epoch then; 0: never read */
    long at[NAMES];           /* the entry each name was found at; -1 absent */
    const char *entry[NAMES]; /* and that entry */
    int rc;                   /* 1 set, 0 unset, -1 malformed */
    int from;                 /* the name the value came from: 0 the row's, k alias k - 1 */
    const char *text;         /* the value's text; NULL unset */
    long value;
} slot;

static _Thread_local env_mark mark;
static _Thread_local slot slots[TETHER__P_COUNT];
static atomic_uint reloads;

void tether__params_reload(void)
{
    atomic_fetch_add_explicit(&reloads, 1, memory_order_relaxed);
}

int tether__plain_decimal(const char *v, int fraction)
{
    const char *p = v + (*v == '-');
    size_t digits = strspn(p, "0123456789");
    if (!digits)
        return 0;
    p += digits;
    if (fraction && *p == '.') {
        digits = strspn(p + 1, "0123456789");
        if (!digits)
            return 0;
        p += 1 + digits;
    }
    return *p == '\0';
}

/* The environment as this thread last saw it: 1 if unchanged, else the mark taken again. */
static int env_unchanged(void)
{
    char **e = tether__environ;
    unsigned r = atomic_load_explicit(&reloads, memory_order_relaxed);
    if (mark.epoch && e == mark.env && r == mark.reloads &&
        (!e || ((!mark.count || e[mark.count - 1] == mark.last) && !e[mark.count])))
        return 1;
    size_t n = 0;
    while (e && e[n])
        n++;
    mark = (env_mark){.env = e,
                      .count = n,
                      .last = n ? e[n - 1] : NULL,
                      .reloads = r,
                      .epoch = mark.epoch + 1 ? mark.epoch + 1 : 1};
    return 0;
}

/* The row's i-th name the accessor reads (its own, then each alias); NULL past the last, "" for
 * an alias its use site reads (one with a ':'). */
static const char *name_at(const tether__param_row *r, int i)
{
    const char *n = i == 0 ? r->name : r->aliases[i - 1];
    return n && strchr(n, ':') ? "" : n;
}

static int slot_fresh(const slot *s)
{
    if (s->epoch != mark.epoch)
        return 0;
    for (int i = 0; i < NAMES; i++)
        if (s->at[i] >= 0 && mark.env[s->at[i]] != s->entry[i])
            return 0;
    return 1;
}

/* The number in v as the row takes it, or -1 when v is malformed or out of its range. */
static int parse(const tether__param_row *r, const char *v, long *out)
{
    switch (r->type) {
    case TETHER__T_TEXT:
    case TETHER__T_PATH:
        return 0;
    case TETHER__T_WORDS:
        for (long i = 0; r->words[i]; i++)
            if (strcmp(v, r->words[i]) == 0) {
                *out = i;
                return 0;
            }
        return -1;
    case TETHER__T_SECONDS: {
        double s = tether__plain_decimal(v, 1) ? strtod(v, NULL) : -1;
        if (!(s >= (double)r->min / 1000 && s <= (double)r->max / 1000))
            return -1;
        *out = (long)(s * 1000 + 0.5);
        return 0;
    }
    case TETHER__T_LONG:
    case TETHER__T_BYTES:
    case TETHER__T_BOOL:
        break;
    }
    int plain = tether__plain_decimal(v, 0);
    errno = 0;
    long x = plain ? strtol(v, NULL, 10) : 0;
    if (!plain || errno || x < r->min || x > r->max)
        return -1;
    *out = x;
    return 0;
}

/* Find the row's names in the environment (the first entry of each, as getenv would) and take
 * the value of the first set, not empty. */
static void read_slot(const tether__param_row *r, slot *s)
{
    size_t len[NAMES];
    const char *names[NAMES];
    for (int i = 0; i < NAMES; i++) {
        names[i] = name_at(r, i);
        len[i] = names[i] ? strlen(names[i]) : 0;
        s->at[i] = -1;
        s->entry[i] = NULL;
    }
    for (size_t k = 0; k < mark.count; k++) {
        const char *e = mark.env[k];
        for (int i = 0; i < NAMES; i++)
            if (len[i] && s->at[i] < 0 && e[0] == names[i][0] &&
                strncmp(e, names[i], len[i]) == 0 && e[len[i]] == '=') {
                s->at[i] = (long)k;
                s->entry[i] = e;
            }
    }
    s->epoch = mark.epoch;
    s->text = NULL;
    s->from = 0;
    s->rc = 0;
    s->value = r->def;
    for (int i = 0; i < NAMES; i++)
        if (s->at[i] >= 0 && s->entry[i][len[i] + 1]) {
            s->text = s->entry[i] + len[i] + 1;
            s->from = i;
            s->rc = parse(r, s->text, &s->value) < 0 ? -1 : 1;
            if (s->rc < 0)
                s->value = r->def;
            return;
        }
}

static const slot *lookup(tether__param id)
{
    slot *s = &slots[id];
    if (!env_unchanged() || !slot_fresh(s))
        read_slot(&tether__params[id], s);
    return s;
}

int tether__param_peek(tether__param id, long *value, const char **text)
{
    const slot *s = lookup(id);
    *value = s->value;
    *text = s->text;
    return s->rc;
}

long tether__param_quiet(tether__param id)
{
    return lookup(id)->value;
}

const char *tether__param_from(tether__param id)
{
    const slot *s = lookup(id);
    return s->text ? name_at(&tether__params[id], s->from) : NULL;
}
