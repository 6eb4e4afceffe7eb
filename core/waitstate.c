/* core/waitstate.c - the records of what each rank is doing, their wire form, and the verdicts
 * (waitstate.h says what and why).
 *
 * Wire form, little-endian: u16 magic, u16 count, then count records, each a 40-byte head (u16
 * rank, u8 what, u8 name length, u32 version, u32 group, u32 seq, i32 peer, i32 tag, i32 err, u16
 * text length, u16 bitmap bytes, u64 moved) followed by the name, the bitmap of the ranks it waits
 * on and the text of its error. */
#include "waitstate.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "errors.h"
#include "params.h"
#include "platform.h"
#include "tag.h"
#include "wire.h"

#define MAGIC 0x5754u /* "TW" */
#define HEAD 40
#define NAME_MAX_LEN 31
#define TEXT_MAX_LEN 240

enum { IDLE, WAITING, FAILED, WHAT_COUNT };

typedef struct record {
    uint32_t version; /* 0: never heard of */
    uint8_t what;
    int32_t peer, tag, err;
    uint32_t group, seq;
    uint64_t moved;
    char name[NAME_MAX_LEN + 1];
    char text[TEXT_MAX_LEN + 1];
    uint8_t *edges;     /* the world ranks it waits on */
    int64_t changed_ms; /* here: when its version last changed */
    uint32_t repeats;   /* here: heartbeats that brought that version again since */
    int direct;         /* here: the last news of it came from itself */
} record;

struct tether__waitstate {
    pthread_mutex_t mu;
    int rank, size, period_ms;
    size_t nbytes;         /* of a bitmap */
    record *rec;           /* one per world rank; rec[rank] is this rank's, as last packed */
    int waiting;           /* threads sleeping in a wait */
    int any;               /* of them, receives from any source */
    uint8_t *any_of;       /* their groups' members */
    record mine;           /* what the next pack tells, but for edges and moved */
    const char *mine_name; /* the name tether__ws_call_end copied into mine, while it stands */
    uint8_t *scratch;      /* the edges the next pack tells */
    int64_t looked_ms;     /* the verdict's last look */
    atomic_uint_fast64_t progress;
    /* changes of mine, each under mu: a call's end that finds the count as its group's last end
     * left it knows mine says what it would write, without the lock (tether__ws_call_end) */
    atomic_uint_fast64_t changes;
};

/* mine changed (mu held). */
static void changed(tether__waitstate *ws)
{
    atomic_fetch_add_explicit(&ws->changes, 1, memory_order_relaxed);
}

static int has(const uint8_t *bits, int r)
{
    return (bits[r / 8] >> (r % 8)) & 1;
}

tether__waitstate *tether__ws_new(int rank, int size, int period_ms)
{
    tether__waitstate *ws = calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    ws->rank = rank;
    ws->size = size;
    ws->period_ms = period_ms;
    ws->nbytes = ((size_t)size + 7) / 8;
    ws->rec = calloc((size_t)size, sizeof *ws->rec);
    /* every bitmap in one block: one per record, then any_of, then scratch */
    uint8_t *bits = calloc((size_t)size + 2, ws->nbytes);
    if (!ws->rec || !bits) {
        free(ws->rec);
        free(bits);
        free(ws);
        return NULL;
    }
    for (int r = 0; r < size; r++)
        ws->rec[r].edges = bits + (size_t)r * ws->nbytes;
    ws->any_of = bits + (size_t)size * ws->nbytes;
    ws->scratch = ws->any_of + ws->nbytes;
    ws->mine.peer = ws->mine.tag = -1;
    atomic_init(&ws->progress, 0);
    atomic_init(&ws->changes, 1); /* a group's first end (changes 0) never matches */
    pthread_mutex_init(&ws->mu, NULL);
    return ws;
}

void tether__ws_free(tether__waitstate *ws)
{
    if (!ws)
        return;
    pthread_mutex_destroy(&ws->mu);
    free(ws->rec[0].edges);
    free(ws->rec);
    free(ws);
}

/* src into dst of size bytes, cut to fit: every call and every wait stores its name here, and
 * snprintf's "%s" was an eighth of an 8-byte all-reduce's instructions. */
static void copy_text(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void tether__ws_wait_begin(tether__waitstate *ws, uint32_t group, uint32_t seq, const char *name,
                           int peer, int tag, const int *members, int n)
{
    if (!ws)
        return;
    pthread_mutex_lock(&ws->mu);
    ws->waiting++;
    ws->mine.what = WAITING;
    ws->mine.group = group;
    ws->mine.seq = seq;
    ws->mine.peer = peer;
    ws->mine.tag = tag;
    ws->mine.err = 0;
    ws->mine.text[0] = '\0';
    ws->mine_name = NULL;
    copy_text(ws->mine.name, sizeof ws->mine.name, name);
    changed(ws);
    if (peer == TETHER__WS_ANY) {
        ws->any++;
        for (int i = 0; i < n; i++)
            if (members[i] != ws->rank)
                ws->any_of[members[i] / 8] |= (uint8_t)(1u << (members[i] % 8));
    }
    pthread_mutex_unlock(&ws->mu);
}

void tether__ws_wait_end(tether__waitstate *ws, int peer, int progressed)
{
    if (!ws)
        return;
    pthread_mutex_lock(&ws->mu);
    if (peer == TETHER__WS_ANY && --ws->any == 0)
        memset(ws->any_of, 0, ws->nbytes);
    if (--ws->waiting == 0) {
        ws->mine.what = IDLE;
        changed(ws);
    }
    pthread_mutex_unlock(&ws->mu);
    if (progressed)
        tether__ws_progress(ws);
}

void tether__ws_progress(tether__waitstate *ws)
{
    if (ws)
        atomic_fetch_add_explicit(&ws->progress, 1, memory_order_relaxed);
}

/* tether__ws_call_end where mine may have changed since the group's last end: under the lock. */
TETHER__NOINLINE static void call_end_locked(tether__waitstate *ws, tether__ws_end *last,
                                             uint32_t group, const char *name, int rc,
                                             const char *text)
{
    pthread_mutex_lock(&ws->mu);
    /* the record says so already (the same call again and again, as in a loop): its copies
     * were a twentieth of an 8-byte all-reduce's instructions */
    int same = rc >= 0 && ws->mine.what == IDLE && ws->mine.group == group &&
               ws->mine_name == name && ws->mine.err == rc && ws->mine.peer == -1 &&
               ws->mine.tag == -1;
    if (ws->waiting == 0 && !same) { /* another thread's wait tells more */
        ws->mine_name = rc < 0 ? NULL : name;
        ws->mine.what = rc < 0 ? FAILED : IDLE;
        ws->mine.group = group;
        ws->mine.err = rc;
        ws->mine.peer = ws->mine.tag = -1;
        copy_text(ws->mine.name, sizeof ws->mine.name, name);
        copy_text(ws->mine.text, sizeof ws->mine.text, rc < 0 ? text : "");
        changed(ws);
        same = rc >= 0;
    }
    if (same) /* mine is this end's, as written or found */
        *last =
            (tether__ws_end){.changes = atomic_load_explicit(&ws->changes, memory_order_relaxed),
                             .name = name,
                             .rc = rc};
    pthread_mutex_unlock(&ws->mu);
}

void tether__ws_call_end(tether__waitstate *ws, tether__ws_end *last, uint32_t group,
                         const char *name, int rc, const char *text)
{
    /* the same call, ending alike, in a loop: its group's last end left mine as this one would,
     * and nothing changed it since (the lock was most of this function's instructions) */
    if (!ws || (rc >= 0 && last->name == name && last->rc == rc &&
                atomic_load_explicit(&ws->changes, memory_order_relaxed) == last->changes))
        return;
    call_end_locked(ws, last, group, name, rc, text);
}

/* Write v at p as core/wire.h does, and step past it. */
static uint8_t *put16(uint8_t *p, uint32_t v)
{
    tether__put_u16(p, v);
    return p + 2;
}
static uint8_t *put32(uint8_t *p, uint32_t v)
{
    tether__put_u32(p, v);
    return p + 4;
}
static uint8_t *put64(uint8_t *p, uint64_t v)
{
    tether__put_u64(p, v);
    return p + 8;
}

/* The bytes record r of rank takes on the wire: the name and text only where they say something. */
static size_t wire_size(const tether__waitstate *ws, const record *r)
{
    return HEAD + ws->nbytes + (r->what != IDLE ? strlen(r->name) : 0) +
           (r->what == FAILED ? strlen(r->text) : 0);
}

static uint8_t *put_record(const tether__waitstate *ws, uint8_t *p, int rank, const record *r)
{
    size_t name = r->what != IDLE ? strlen(r->name) : 0;
    size_t text = r->what == FAILED ? strlen(r->text) : 0;
    p = put16(p, (uint32_t)rank);
    *p++ = r->what;
    *p++ = (uint8_t)name;
    p = put32(p, r->version);
    p = put32(p, r->group);
    p = put32(p, r->seq);
    p = put32(p, (uint32_t)r->peer);
    p = put32(p, (uint32_t)r->tag);
    p = put32(p, (uint32_t)r->err);
    p = put16(p, (uint32_t)text);
    p = put16(p, (uint32_t)ws->nbytes);
    p = put64(p, r->moved);
    memcpy(p, r->name, name);
    p += name;
    memcpy(p, r->edges, ws->nbytes);
    p += ws->nbytes;
    memcpy(p, r->text, text);
    return p + text;
}

/* This rank's record as the pack will tell it, from mine, pending and moved: a new version when
 * anything in it changed. */
static void renew_own(tether__waitstate *ws, const uint8_t *pending, uint64_t moved, int64_t now)
{
    record *own = &ws->rec[ws->rank];
    record next = ws->mine;
    next.moved = moved + atomic_load_explicit(&ws->progress, memory_order_relaxed);
    for (size_t i = 0; i < ws->nbytes; i++)
        ws->scratch[i] = next.what == WAITING ? (uint8_t)(pending[i] | ws->any_of[i]) : 0;
    if (own->version && own->what == next.what && own->group == next.group &&
        own->seq == next.seq && own->peer == next.peer && own->tag == next.tag &&
        own->err == next.err && own->moved == next.moved && !strcmp(own->name, next.name) &&
        !strcmp(own->text, next.text) && !memcmp(own->edges, ws->scratch, ws->nbytes)) {
        own->repeats++;
        return;
    }
    next.version = own->version + 1;
    next.edges = own->edges;
    memcpy(next.edges, ws->scratch, ws->nbytes);
    next.changed_ms = now;
    next.repeats = 0;
    next.direct = 1;
    *own = next;
}

size_t tether__ws_pack(tether__waitstate *ws, const uint8_t *pending, uint64_t moved, uint8_t *out,
                       size_t cap)
{
    pthread_mutex_lock(&ws->mu);
    renew_own(ws, pending, moved, tether__now_ms());
    uint8_t *p = out + 4;
    uint32_t count = 0;
    for (int i = 0; i < ws->size; i++) { /* this rank's first, then the others it knows */
        int r = (ws->rank + i) % ws->size;
        const record *rec = &ws->rec[r];
        if (!rec->version)
            continue;
        if ((size_t)(p - out) + wire_size(ws, rec) > cap)
            break;
        p = put_record(ws, p, r, rec);
        count++;
    }
    pthread_mutex_unlock(&ws->mu);
    if (!count)
        return 0;
    put16(put16(out, MAGIC), count);
    return (size_t)(p - out);
}

/* Record i of in: its place checked and read into *r (name, text and edges pointing into in). */
typedef struct wire_record {
    int rank;
    record r;
    const uint8_t *edges;
    size_t name, text;
} wire_record;

static const char *read_record(const tether__waitstate *ws, const uint8_t *p, size_t left,
                               wire_record *w, size_t *used)
{
    if (left < HEAD)
        return "a record cut short";
    w->rank = (int)tether__get_u16(p);
    w->r.what = p[2];
    w->name = p[3];
    w->r.version = tether__get_u32(p + 4);
    w->r.group = tether__get_u32(p + 8);
    w->r.seq = tether__get_u32(p + 12);
    w->r.peer = (int32_t)tether__get_u32(p + 16);
    w->r.tag = (int32_t)tether__get_u32(p + 20);
    w->r.err = (int32_t)tether__get_u32(p + 24);
    w->text = tether__get_u16(p + 28);
    size_t nbytes = tether__get_u16(p + 30);
    w->r.moved = tether__get_u64(p + 32);
    if (w->rank >= ws->size || w->r.what >= WHAT_COUNT || !w->r.version)
        return "a record of no rank, state or version";
    if (nbytes != ws->nbytes || w->name > NAME_MAX_LEN || w->text > TEXT_MAX_LEN)
        return "a record with fields of the wrong length";
    *used = HEAD + w->name + nbytes + w->text;
    if (*used > left)
        return "a record cut short";
    memcpy(w->r.name, p + HEAD, w->name);
    w->r.name[w->name] = '\0';
    w->edges = p + HEAD + w->name;
    memcpy(w->r.text, w->edges + nbytes, w->text);
    w->r.text[w->text] = '\0';
    for (int r = ws->size; r < (int)(8 * nbytes); r++)
        if (has(w->edges, r))
            return "a record waiting on a rank outside the world";
    return NULL;
}

int tether__ws_merge(tether__waitstate *ws, int from, const uint8_t *in, size_t len, char *why,
                     size_t why_len)
{
    const char *bad = NULL;
    size_t at = 4, used = 0;
    uint32_t count = len >= 4 ? tether__get_u16(in + 2) : 0;
    if (len < 4 || tether__get_u16(in) != MAGIC || count == 0)
        bad = "not a list of records";
    wire_record w;
    for (uint32_t i = 0; !bad && i < count; i++, at += used) /* check them all first */
        bad = read_record(ws, in + at, len - at, &w, &used);
    if (!bad && at != len)
        bad = "bytes after the last record";
    if (bad) {
        snprintf(why, why_len, "rank %d sent a malformed heartbeat: %s", from, bad);
        return -1;
    }
    int64_t now = tether__now_ms();
    pthread_mutex_lock(&ws->mu);
    at = 4;
    for (uint32_t i = 0; i < count; i++, at += used) {
        read_record(ws, in + at, len - at, &w, &used);
        record *held = &ws->rec[w.rank];
        if (w.rank == ws->rank || w.r.version < held->version)
            continue;
        if (w.r.version == held->version) { /* the same news again: note who brought it */
            held->repeats++;
            held->direct |= from == w.rank;
            continue;
        }
        uint8_t *edges = held->edges;
        *held = w.r;
        held->edges = edges;
        memcpy(edges, w.edges, ws->nbytes);
        held->changed_ms = now;
        held->repeats = 0;
        held->direct = from == w.rank;
    }
    pthread_mutex_unlock(&ws->mu);
    return 0;
}

/* r counts as stuck once it stayed the same for TETHER__WS_STABLE periods here and as many
 * heartbeats brought it again since: a record that merely did not arrive (its rank or this one
 * waited for a core, a copy kept the sender busy) proves nothing. News that came through other
 * ranks may be as old as a heartbeat per rank it passed (half the world round a ring, at most). */
static int settled(const tether__waitstate *ws, const record *r, int64_t now)
{
    int periods = TETHER__WS_STABLE + (r->direct ? 0 : ws->size / 2);
    return r->repeats >= TETHER__WS_STABLE &&
           now - r->changed_ms >= (int64_t)periods * ws->period_ms;
}

/* "recv (tag 7)", "all_reduce (group 0000002a, call 3)": where r waits or failed. */
static void where(const record *r, char *buf, size_t n)
{
    if (r->tag >= 0)
        snprintf(buf, n, "%s (tag %d)", r->name[0] ? r->name : "a call", (int)r->tag);
    else
        snprintf(buf, n, "%s (group %08x, call %u)", r->name[0] ? r->name : "a call",
                 (unsigned)r->group, (unsigned)r->seq);
}

/* A peer this rank waits on failed and has not called since, for a period and a heartbeat that
 * said so again (time for a retry). */
static int failed_peer(const tether__waitstate *ws, int64_t now, char *why, size_t why_len)
{
    const record *own = &ws->rec[ws->rank];
    for (int p = 0; p < ws->size; p++) {
        const record *r = &ws->rec[p];
        if (p == ws->rank || !has(own->edges, p) || r->what != FAILED || r->repeats < 1 ||
            now - r->changed_ms < ws->period_ms)
            continue;
        char mine[96], theirs[96];
        where(own, mine, sizeof mine);
        snprintf(theirs, sizeof theirs, "%s", r->name[0] ? r->name : "a call");
        snprintf(why, why_len,
                 "rank %d waits for rank %d in %s, but rank %d failed its %s with %s and has made "
                 "no call since: %s",
                 ws->rank, p, mine, p, theirs, tether_err_name(r->err), r->text);
        return TETHER_EPEER;
    }
    return TETHER_OK;
}

/* Of the ranks this one reaches by its waits (reached[0 .. n), all waiting, settled), one that
 * waits in a collective which a rank it waits for has left for a later one of the same group: 1
 * and the pair, else 0. In a program whose ranks made the same calls that cannot last: a rank
 * leaves a collective only once it has sent and received all of its part. So they disagreed on
 * that call where no message told them: a broadcast whose ranks took different roots, whose data
 * flows only down the trees they each drew. */
static int left_behind(const tether__waitstate *ws, const int *reached, int n, int *waiter,
                       int *waited)
{
    for (int i = 0; i < n; i++) {
        const record *r = &ws->rec[reached[i]];
        for (int p = 0; p < ws->size; p++) {
            const record *q = &ws->rec[p];
            if (has(r->edges, p) && r->tag < 0 && q->tag < 0 && r->group == q->group &&
                tether__tag_seq_diff(q->seq, r->seq) > 0) {
                *waiter = reached[i];
                *waited = p;
                return 1;
            }
        }
    }
    return 0;
}

/* Every rank this one reaches by its waits is itself waiting, settled, on someone: then a cycle
 * among them, from this rank on, into why. */
static int deadlocked(const tether__waitstate *ws, int64_t now, char *why, size_t why_len)
{
    int n = ws->size, found = TETHER_OK;
    int *queue = malloc(sizeof *queue * (size_t)n * 2), *from = queue + n;
    if (!queue)
        return TETHER_OK;
    for (int r = 0; r < n; r++)
        from[r] = -1;
    int head = 0, tail = 0, ok = 1;
    queue[tail++] = ws->rank;
    from[ws->rank] = ws->rank;
    while (ok && head < tail) {
        const record *r = &ws->rec[queue[head++]];
        int out = 0;
        ok = r->what == WAITING && settled(ws, r, now);
        for (int p = 0; ok && p < n; p++)
            if (has(r->edges, p)) {
                out++;
                if (from[p] < 0) {
                    from[p] = queue[head - 1];
                    queue[tail++] = p;
                }
            }
        ok = ok && out > 0;
    }
    int waiter, waited;
    if (ok && left_behind(ws, queue, tail, &waiter, &waited)) {
        char mine[96], theirs[96];
        where(&ws->rec[waiter], mine, sizeof mine);
        where(&ws->rec[waited], theirs, sizeof theirs);
        snprintf(why, why_len,
                 "rank %d waits for rank %d in %s, but rank %d has left that call and waits in %s: "
                 "the ranks called different collectives there, or with different counts, dtypes, "
                 "ops or roots (a broadcast's data flows from its root only, so no message told "
                 "them)",
                 waiter, waited, mine, waited, theirs);
        found = TETHER_EMISMATCH;
    } else if (ok) {       /* walk the first waits from this rank until a rank repeats: a cycle */
        int *seen = queue; /* reused: the step at which each rank was walked, -1 if not */
        for (int r = 0; r < n; r++)
            seen[r] = -1;
        int at = ws->rank, step = 0;
        while (seen[at] < 0) {
            seen[at] = step++;
            int next = 0;
            while (!has(ws->rec[at].edges, next))
                next++;
            from[at] = next; /* reused: the next rank of the walk */
            at = next;
        }
        int start = at, one_call = 1;
        do { /* every rank of the cycle in one collective: then no program's order is wrong */
            const record *r = &ws->rec[at], *s0 = &ws->rec[start];
            one_call &= r->tag < 0 && r->group == s0->group && r->seq == s0->seq;
            at = from[at];
        } while (at != start);
        size_t used = (size_t)snprintf(why, why_len, "%s",
                                       one_call ? "stalled inside one call: " : "deadlock: ");
        do {
            char w[96];
            where(&ws->rec[at], w, sizeof w);
            if (used < why_len)
                used += (size_t)snprintf(why + used, why_len - used,
                                         "%srank %d waits for rank %d in %s",
                                         at == start ? "" : "; ", at, from[at], w);
            at = from[at];
        } while (at != start);
        if (used < why_len && one_call)
            snprintf(why + used, why_len - used,
                     "; none of them moved for %d heartbeats, though each sent its part: data was "
                     "lost on the way (a dead link or cable, %s=1 names each)",
                     TETHER__WS_STABLE, TETHER__VAR(VERBOSE));
        else if (used < why_len)
            snprintf(why + used, why_len - used,
                     "; none of them moved for %d heartbeats (%s=0 if another thread of one will "
                     "still send)",
                     TETHER__WS_STABLE, TETHER__VAR(DEADLOCK));
        found = one_call ? TETHER_ENET : TETHER_EDEADLOCK;
    }
    free(queue);
    return found;
}

int tether__ws_verdict(tether__waitstate *ws, char *why, size_t why_len)
{
    if (!ws)
        return TETHER_OK;
    int64_t now = tether__now_ms();
    int rc = TETHER_OK;
    pthread_mutex_lock(&ws->mu);
    if (ws->waiting && ws->rec[ws->rank].what == WAITING &&
        now - ws->looked_ms >= ws->period_ms / 4) {
        ws->looked_ms = now;
        rc = failed_peer(ws, now, why, why_len);
        if (rc == TETHER_OK)
            rc = deadlocked(ws, now, why, why_len);
    }
    pthread_mutex_unlock(&ws->mu);
    return rc;
}
