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
    int found;                /* how many of its names the environment has */
    long at[NAMES];           /* the entry of each found, by index */
    const char *entry[NAMES]; /* and that entry */
    int rc;                   /* 1 set, 0 unset, -1 malformed */
    int from;                 /* the name the value came from: 0 the row's, k alias k - 1 */
    const char *text;         /* the value's text; NULL unset */
    long value;
} slot;

/* This thread's: one thread-local object, so a read computes one thread-local address (in a
 * shared library each is a call). */
typedef struct cache {
    env_mark mark;
    slot slots[TETHER__P_COUNT];
} cache;

static _Thread_local cache tls;
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

/* 1 if the environment is as this thread last saw it: a few loads. */
static inline int env_same(const env_mark *m)
{
    char **e = tether__environ;
    return m->epoch && e == m->env &&
           atomic_load_explicit(&reloads, memory_order_relaxed) == m->reloads &&
           (!e || ((!m->count || e[m->count - 1] == m->last) && !e[m->count]));
}

/* The mark taken again, under a new epoch. */
static void remark(env_mark *m)
{
    char **e = tether__environ;
    size_t n = 0;
    while (e && e[n])
        n++;
    *m = (env_mark){.env = e,
                    .count = n,
                    .last = n ? e[n - 1] : NULL,
                    .reloads = atomic_load_explicit(&reloads, memory_order_relaxed),
                    .epoch = m->epoch + 1 ? m->epoch + 1 : 1};
}

/* The row's i-th name the accessor reads (its own, then each alias); NULL past the last, "" for
 * an alias its use site reads (one with a ':'). */
static const char *name_at(const tether__param_row *r, int i)
{
    const char *n = i == 0 ? r->name : r->aliases[i - 1];
    return n && strchr(n, ':') ? "" : n;
}

static int slot_fresh(const env_mark *m, const slot *s)
{
    if (s->epoch != m->epoch)
        return 0;
    for (int i = 0; i < s->found; i++)
        if (m->env[s->at[i]] != s->entry[i])
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
static void read_slot(const env_mark *m, const tether__param_row *r, slot *s)
{
    size_t len[NAMES];
    const char *names[NAMES], *value[NAMES] = {NULL};
    for (int i = 0; i < NAMES; i++) {
        names[i] = name_at(r, i);
        len[i] = names[i] ? strlen(names[i]) : 0;
    }
    s->found = 0;
    for (size_t k = 0; k < m->count; k++) {
        const char *e = m->env[k];
        for (int i = 0; i < NAMES; i++)
            if (len[i] && !value[i] && e[0] == names[i][0] && strncmp(e, names[i], len[i]) == 0 &&
                e[len[i]] == '=') {
                value[i] = e + len[i] + 1;
                s->at[s->found] = (long)k;
                s->entry[s->found++] = e;
            }
    }
    s->epoch = m->epoch;
    s->text = NULL;
    s->from = 0;
    s->rc = 0;
    s->value = r->def;
    for (int i = 0; i < NAMES; i++)
        if (value[i] && *value[i]) {
            s->text = value[i];
            s->from = i;
            s->rc = parse(r, s->text, &s->value) < 0 ? -1 : 1;
            if (s->rc < 0)
                s->value = r->def;
            return;
        }
}

/* The slow path, out of line: the environment looked at again where it changed, the setting
 * read. */
TETHER__NOINLINE static int peek_slow(cache *c, tether__param id, long *value, const char **text)
{
    slot *s = &c->slots[id];
    if (!env_same(&c->mark))
        remark(&c->mark);
    read_slot(&c->mark, &tether__params[id], s);
    *value = s->value;
    *text = s->text;
    return s->rc;
}

/* The fast path, written out here rather than in a helper and leaving by a tail call otherwise, so
 * that it stays a few loads and compares while the environment and the setting's entries are
 * unchanged. */
int tether__param_peek(tether__param id, long *value, const char **text)
{
    cache *c = &tls;
    const slot *s = &c->slots[id];
    if (!env_same(&c->mark) || !slot_fresh(&c->mark, s))
        return peek_slow(c, id, value, text);
    *value = s->value;
    *text = s->text;
    return s->rc;
}

/* tether__param_peek_values from the first setting that changed on, out of line (as peek_slow). */
TETHER__NOINLINE static void peek_values_slow(cache *c, const tether__param *ids, int n, int *rc,
                                              long *value)
{
    for (int i = 0; i < n; i++) {
        const char *text;
        rc[i] = peek_slow(c, ids[i], &value[i], &text);
    }
}

void tether__param_peek_values(const tether__param *ids, int n, int *restrict rc,
                               long *restrict value)
{
    cache *c = &tls;
    int i = 0;
    if (env_same(&c->mark))
        for (const slot *s; i < n && slot_fresh(&c->mark, s = &c->slots[ids[i]]); i++) {
            rc[i] = s->rc;
            value[i] = s->value;
        }
    if (i < n)
        peek_values_slow(c, ids + i, n - i, rc + i, value + i);
}

long tether__param_quiet(tether__param id)
{
    long value;
    const char *text;
    tether__param_peek(id, &value, &text);
    return value;
}

const char *tether__param_from(tether__param id)
{
    long value;
    const char *text;
    tether__param_peek(id, &value, &text);
    return text ? name_at(&tether__params[id], tls.slots[id].from) : NULL;
}
