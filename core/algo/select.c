/* core/algo/select.c - which algorithm runs a collective: TETHER_ALLREDUCE_ALGO, TETHER_TREE_BELOW,
 * the group size and the transport's links. The only place a choice is made (coll.c asks once per
 * call, before numbering it); the settings are read on every call and parsed and validated when
 * their text changes, so a malformed one fails the call that uses it before anything is sent.
 *
 * Small messages where only ring neighbours are linked (a transport without TETHER_CAP_DIRECT, 3 or
 * more ranks: the ring backend from 4 ranks, RDMA's ring mode): the neighbour algorithms
 * (NEIGHBOR), which talk to the two neighbours only, both ways at once, in ceil((n - 1) / 2) steps;
 * the latency algorithms below send to ranks 2, 4, ... away, and there every such message is
 * forwarded hop by hop (at N = 8, 7 links on recursive doubling's critical path against 4;
 * docs/tuning.md).
 *
 * all_reduce, auto: under TETHER_TREE_BELOW bytes (default TETHER_TREE_BELOW_DEFAULT, or
 * TETHER_NEIGHBOR_BELOW where only neighbours are linked, or TETHER_ONE_HOST_TREE_BELOW on a full
 * mesh of up to 4 ranks of one host) the neighbour algorithm where only neighbours are linked,
 * else the latency algorithm (recursive doubling: log2(n) messages); above it, on a full mesh
 * (TETHER_CAP_DIRECT) of up to TETHER_DIRECT_MAX_RANKS ranks the direct algorithm (two steps,
 * every link busy), else the ring (bandwidth-optimal, two links per rank, fine when only
 * neighbours are direct). Ranks all on one host (TETHER_CAP_ONE_HOST) share cores and caches, not
 * cables: on a full mesh, 2 or 4 of them take recursive halving-doubling (one peer per step) up to
 * TETHER_ONE_HOST_BUTTERFLY_MAX, and other counts of 3 or more the ring in the band of sizes where
 * the direct algorithm outgrows the shared caches (TETHER_ONE_HOST_RING_MIN..MAX); 2 of them take
 * the butterfly below the latency threshold too where the vector takes two of the links' packets
 * and its half one (allreduce_packet_band), unless TETHER_TREE_BELOW is set.
 * TETHER_ALLREDUCE_ALGO forces one for all_reduce only. Small vectors stay on the tree even on a
 * full mesh: the direct algorithm's one-step path (one latency) lost to it at N = 3, 4 on two
 * shared cores, where waiting on n - 1 peers at once costs more than log2(n) rounds with one
 * (docs/tuning.md). all_gather and reduce_scatter: direct on such a mesh, else ring; all_gather
 * whose result is at most TETHER_NEIGHBOR_GATHER_MAX bytes where only neighbours are linked:
 * neighbour. all_to_all: direct (every message at once). broadcast: the pipelined chain (RING),
 * but the neighbour algorithm for small messages where only neighbours are linked and the binomial
 * tree for large ones where peers read each other's memory (bcast_auto); under an explicit
 * TETHER_TREE_BELOW the neighbour algorithm or the tree, the chain above. barrier: neighbour where
 * only neighbours are linked, else dissemination. The choice goes into the call signature, so ranks
 * whose settings differ get TETHER_EMISMATCH. */
#include <errno.h>
#include <stdint.h> /* SIZE_MAX */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/algo/algo.h"
#include "core/algo/select.h"
#include "core/platform.h"

static const char *const algo_names[TETHER_ALGO_COUNT] = {
    [TETHER_ALGO_AUTO] = "auto",     [TETHER_ALGO_RING] = "ring",
    [TETHER_ALGO_TREE] = "tree",     [TETHER_ALGO_BUTTERFLY] = "butterfly",
    [TETHER_ALGO_DIRECT] = "direct", [TETHER_ALGO_NEIGHBOR] = "neighbor",
};

const char *tether__algo_name(tether_algo a)
{
    return ((int)a >= 0 && a < TETHER_ALGO_COUNT) ? algo_names[a] : "?";
}

int tether__algo_parse(const char *s)
{
    if (!s || !*s)
        return TETHER_ALGO_AUTO;
    for (int a = 0; a < TETHER_ALGO_COUNT; a++)
        if (strcmp(s, algo_names[a]) == 0)
            return a;
    return -1;
}

/* TETHER_TREE_BELOW's text as a byte count in *out: 1 when set, 0 when empty (unset: each
 * collective's default), -1 when malformed (docs/env.md: TETHER_ECONFIG, never the default in its
 * place). */
static int parse_tree_below(const char *v, size_t *out)
{
    *out = 0;
    if (!*v)
        return 0;
    errno = 0;
    unsigned long long x = strtoull(v, NULL, 10);
    if (!tether__plain_decimal(v, 0) || v[0] == '-' || errno || x > SIZE_MAX)
        return -1;
    *out = (size_t)x;
    return 1;
}

/* s past prefix p (of len bytes), or NULL when s does not start with it. */
static const char *after(const char *s, const char *p, size_t len)
{
    return s[0] == p[0] && strncmp(s, p, len) == 0 ? s + len
                                                   : NULL; /* one compare for most names */
}
#define AFTER(s, p) after((s), (p), sizeof(p) - 1)

/* Where the settings' entries were in the environment when last read, so that a call can tell in
 * a few loads that nothing they depend on changed: setenv and putenv give a changed variable a new
 * entry string, add a new one at the end, and unsetenv closes the gap, so the array, its length,
 * its last entry and the settings' own entries all unchanged mean unchanged settings. Walking the
 * whole array instead (a hash of its pointers) was a tenth of a small all-reduce's instructions,
 * and the scan of every entry's text a fifth before that. (A string given to putenv and then
 * changed in place keeps its entry: such a change shows once the environment changes otherwise.)
 */
enum { NAME_ALGO, NAME_BELOW, NAME_MCCL_ALGO, NAME_MCCL_BELOW, NAMES };
typedef struct env_mark {
    char **env;       /* the array read */
    size_t count;     /* its entries */
    const char *last; /* its last entry */
    long at[NAMES];   /* the entry each name was read from; -1 absent */
    const char *entry[NAMES];
} env_mark;

static int env_unchanged(const env_mark *m)
{
    char **e = tether__environ;
    if (e != m->env || !e)
        return e == m->env;
    if ((m->count && e[m->count - 1] != m->last) || e[m->count])
        return 0;
    for (int k = 0; k < NAMES; k++)
        if (m->at[k] >= 0 && e[m->at[k]] != m->entry[k])
            return 0;
    return 1;
}

/* The algorithm settings' text, in one pass over the environment, finding what getenv would (the
 * first entry of each name; mccl's names when tether's are unset or empty): two getenv calls were
 * a fifth of a small all-reduce's instructions (docs/tuning.md). "" when unset. *m says where they
 * were. */
static void settings_text(const char **algo, const char **below, env_mark *m)
{
    static const char *const names[NAMES] = {
        "ALLREDUCE_ALGO=", "TREE_BELOW=", "ALLREDUCE_ALGO=", "TREE_BELOW="};
    const char *v[NAMES] = {NULL, NULL, NULL, NULL};
    char **env = tether__environ, **e = env;
    *m = (env_mark){.env = env, .at = {-1, -1, -1, -1}};
    for (; e && *e; e++) {
        const char *rest = AFTER(*e, "TETHER_");
        int k = 0;
        if (!rest && (rest = AFTER(*e, "MCCL_")) != NULL)
            k = NAME_MCCL_ALGO;
        for (int end = k + 2; rest && k < end; k++)
            if (!v[k] && (v[k] = after(rest, names[k], strlen(names[k]))) != NULL) {
                m->at[k] = e - env;
                m->entry[k] = *e;
                break;
            }
    }
    m->count = env ? (size_t)(e - env) : 0;
    m->last = m->count ? env[m->count - 1] : NULL;
    *algo = v[NAME_ALGO] && *v[NAME_ALGO] ? v[NAME_ALGO]
            : v[NAME_MCCL_ALGO]           ? v[NAME_MCCL_ALGO]
                                          : "";
    *below = v[NAME_BELOW] && *v[NAME_BELOW] ? v[NAME_BELOW]
             : v[NAME_MCCL_BELOW]            ? v[NAME_MCCL_BELOW]
                                             : "";
}

/* The settings parsed from their text; parsed again only when the text changes. */
typedef struct algo_settings {
    char algo_text[32], below_text[32]; /* what they were parsed from; "" unset */
    int algo;                           /* tether_algo; -1 malformed */
    int below_set;                      /* 1 set, 0 unset (each collective's default), -1 bad */
    size_t below;
} algo_settings;

/* 1 if text is what buf holds (text too long for buf never is: it is parsed every time). */
static int same_text(const char buf[32], const char *text)
{
    return strlen(text) < 32 && strcmp(buf, text) == 0;
}

/* This thread's settings as the environment has them now (each thread keeps its own copy, so
 * threads on sibling groups never share one). */
static const algo_settings *settings(void)
{
    static _Thread_local algo_settings cur = {.algo_text = "\x01"}; /* matches no text at first */
    static _Thread_local env_mark mark;
    if (cur.algo_text[0] != 1 && env_unchanged(&mark))
        return &cur;
    const char *algo, *below;
    settings_text(&algo, &below, &mark);
    if (same_text(cur.algo_text, algo) && same_text(cur.below_text, below))
        return &cur;
    snprintf(cur.algo_text, sizeof cur.algo_text, "%s", algo);
    snprintf(cur.below_text, sizeof cur.below_text, "%s", below);
    cur.algo = tether__algo_parse(algo);
    cur.below_set = parse_tree_below(below, &cur.below);
    return &cur;
}

/* TETHER_ECONFIG naming the variable and what it accepts, when a setting the call uses is
 * malformed. */
static int bad_algo(void)
{
    const char *v, *unused;
    env_mark m;
    settings_text(&v, &unused, &m);
    return tether__fail(
        TETHER_ECONFIG,
        "TETHER_ALLREDUCE_ALGO=\"%s\": expected auto, ring, tree, butterfly, direct or neighbor "
        "(or unset)",
        v);
}

static int bad_below(void)
{
    const char *unused, *v;
    env_mark m;
    settings_text(&unused, &v, &m);
    return tether__fail(
        TETHER_ECONFIG,
        "TETHER_TREE_BELOW=\"%s\": expected a number of bytes (0 or more, or unset)", v);
}

int tether__algo_settings_check(void)
{
    const algo_settings *s = settings();
    if (s->algo < 0)
        return bad_algo();
    if (s->below_set < 0)
        return bad_below();
    return TETHER_OK;
}

static unsigned caps_of(const tether_group *g)
{
    const tether_world *w = g->world;
    return w->ops->caps(w->ep);
}

static int full_mesh(const tether_group *g, unsigned caps)
{
    return (caps & TETHER_CAP_DIRECT) && g->size <= TETHER_DIRECT_MAX_RANKS;
}

/* Only ring neighbours are linked: 3 or more ranks (with 2 the neighbour is every peer) on a
 * transport without TETHER_CAP_DIRECT. */
static int neighbours_only(const tether_group *g, unsigned caps)
{
    return !(caps & TETHER_CAP_DIRECT) && g->size >= 3;
}

/* The latency algorithm for small messages: the neighbour algorithm where only neighbours are
 * linked, else the tree (dissemination for the barrier). */
static tether_algo small_algo(const tether_group *g, unsigned caps)
{
    return neighbours_only(g, caps) ? TETHER_ALGO_NEIGHBOR : TETHER_ALGO_TREE;
}

/* All-reduce's default latency threshold: TETHER_NEIGHBOR_BELOW where only neighbours are linked,
 * TETHER_ONE_HOST_TREE_BELOW on a small full mesh of one host, else TETHER_TREE_BELOW_DEFAULT.
 * Under the smallest all give the latency algorithm, so small vectors ask no caps. */
static size_t allreduce_tree_below(const tether_group *g, size_t bytes)
{
    if (bytes < TETHER_TREE_BELOW_DEFAULT)
        return TETHER_TREE_BELOW_DEFAULT;
    unsigned caps = caps_of(g);
    if (neighbours_only(g, caps))
        return TETHER_NEIGHBOR_BELOW;
    return g->size <= TETHER_ONE_HOST_TREE_MAX_RANKS && full_mesh(g, caps) &&
                   (caps & TETHER_CAP_ONE_HOST)
               ? TETHER_ONE_HOST_TREE_BELOW
               : TETHER_TREE_BELOW_DEFAULT;
}

/* 2 ranks of one host whose vector (as it travels) takes two packets but its half one: recursive
 * doubling's one message of the whole vector would cost a second packet, and the receiver an
 * immediate acknowledgement and a second read, where the butterfly's messages of half fit one
 * each (measured: docs/perf/notes.md, core/algo/select.c). Only on a full mesh of one host, whose
 * links look alike from both ends, so both ranks choose alike; such links are loopback, whose
 * packets hold 64 KiB on Linux (elsewhere the backends report no packet yet), so smaller vectors
 * ask nothing. */
#define PACKET_BAND_MIN ((size_t)8 << 10)

static int allreduce_packet_band(const tether_group *g, const tether_coll *c)
{
    const tether_world *w = g->world;
    size_t wsize = tether__wire_of(c).wsize, bytes = c->count * wsize;
    if (g->size != 2 || bytes <= PACKET_BAND_MIN || !w->ops->packet)
        return 0;
    unsigned caps = caps_of(g);
    if (!full_mesh(g, caps) || !(caps & TETHER_CAP_ONE_HOST))
        return 0;
    size_t packet = w->ops->packet(w->ep), half = (c->count + 1) / 2 * wsize;
    return packet && bytes > packet && half <= packet;
}

/* The ring where only neighbours are linked; on a full mesh the butterfly where 2 or 4 ranks share
 * one host and the vector lies in its band, the ring in its band where 3 or more others do, else
 * the direct algorithm. */
static tether_algo allreduce_auto(const tether_group *g, size_t bytes, size_t tree_below)
{
    unsigned caps = caps_of(g);
    if (bytes < tree_below)
        return small_algo(g, caps);
    if (!full_mesh(g, caps))
        return TETHER_ALGO_RING;
    /* only on a full mesh is TETHER_CAP_ONE_HOST the same on every rank: a ring rank knows only
     * its neighbours, and ranks choosing differently would fail with TETHER_EMISMATCH */
    int one_host = (caps & TETHER_CAP_ONE_HOST) != 0;
    if (one_host && (g->size == 2 || g->size == 4) && bytes < TETHER_ONE_HOST_BUTTERFLY_MAX)
        return TETHER_ALGO_BUTTERFLY;
    return one_host && bytes >= TETHER_ONE_HOST_RING_MIN && bytes < TETHER_ONE_HOST_RING_MAX
               ? TETHER_ALGO_RING
               : TETHER_ALGO_DIRECT;
}

/* All-gather of result_bytes in all: the neighbour algorithm for small results where only
 * neighbours are linked, else direct on a full mesh, else the ring. */
static tether_algo gather_auto(const tether_group *g, size_t result_bytes)
{
    unsigned caps = caps_of(g);
    if (neighbours_only(g, caps) && result_bytes <= TETHER_NEIGHBOR_GATHER_MAX)
        return TETHER_ALGO_NEIGHBOR;
    return full_mesh(g, caps) ? TETHER_ALGO_DIRECT : TETHER_ALGO_RING;
}

/* Broadcast's default (TETHER_TREE_BELOW unset). Where only neighbours are linked, the neighbour
 * algorithm under TETHER_BCAST_TREE_BELOW_DEFAULT and the chain above. On a full mesh the pipelined
 * chain at every size, since each rank then receives from one and sends to one and back-to-back
 * broadcasts overlap (sockets, interleaved, N = 3, 4, 6, 8: 0.5-0.8x the binomial tree's time from
 * 8 B to 1 MiB; docs/perf/notes.md), except where the peers read each other's memory, from
 * TETHER_BCAST_MEMORY_TREE_MIN: a reader copies the whole buffer at once, while the chain pays a
 * descriptor round trip per segment (N = 3, 1 MiB: 0.25 ms tree, 0.34 ms chain). */
static tether_algo bcast_auto(const tether_group *g, size_t bytes)
{
    unsigned caps = caps_of(g);
    if (neighbours_only(g, caps))
        return bytes < TETHER_BCAST_TREE_BELOW_DEFAULT ? TETHER_ALGO_NEIGHBOR : TETHER_ALGO_RING;
    if (g->size == 2) /* one hop either way: the tree, without the chain's segments, as before */
        return bytes < TETHER_BCAST_TREE_BELOW_DEFAULT || (caps & TETHER_CAP_READS_MEMORY)
                   ? TETHER_ALGO_TREE
                   : TETHER_ALGO_RING;
    return bytes >= TETHER_BCAST_MEMORY_TREE_MIN && (caps & TETHER_CAP_READS_MEMORY)
               ? TETHER_ALGO_TREE
               : TETHER_ALGO_RING;
}

/* TETHER_VERBOSE=1 shows the choice; only when it changes (per thread and kind), not on every call.
 */
static tether_algo log_choice(const tether_coll *c, tether_algo a)
{
    static const char *const kinds[TETHER_COLL_KIND_COUNT] = {
        "all_reduce", "all_gather", "reduce_scatter", "broadcast",
        "all_to_all", "barrier",    "send/recv"};
    static _Thread_local tether_algo last[TETHER_COLL_KIND_COUNT];
    if ((int)c->kind >= 0 && c->kind < TETHER_COLL_KIND_COUNT && last[c->kind] != a) {
        last[c->kind] = a;
        TLOG_INFO("%s of %zu bytes: %s algorithm", kinds[c->kind], c->count * c->esize,
                  tether__algo_name(a));
    }
    return a;
}

/* The algorithm of c on g under settings s, or TETHER_ECONFIG (recorded) when a setting c uses is
 * malformed. */
static int choose(const tether_group *g, const tether_coll *c, const algo_settings *s)
{
    size_t bytes = c->count * c->esize;
    switch (c->kind) {
    case TETHER_COLL_ALL_REDUCE:
        if (s->algo < 0)
            return bad_algo();
        if (s->algo != TETHER_ALGO_AUTO)
            return s->algo;
        if (s->below_set < 0)
            return bad_below();
        if (!s->below_set && allreduce_packet_band(g, c))
            return TETHER_ALGO_BUTTERFLY;
        return allreduce_auto(g, bytes, s->below_set ? s->below : allreduce_tree_below(g, bytes));
    case TETHER_COLL_ALL_GATHER:
        return gather_auto(g, bytes * (size_t)g->size);
    case TETHER_COLL_REDUCE_SCATTER:
        return full_mesh(g, caps_of(g)) ? TETHER_ALGO_DIRECT : TETHER_ALGO_RING;
    case TETHER_COLL_BROADCAST:
        if (s->below_set < 0)
            return bad_below();
        if (!s->below_set)
            return bcast_auto(g, bytes);
        return bytes < s->below ? small_algo(g, caps_of(g)) : TETHER_ALGO_RING;
    case TETHER_COLL_ALL_TO_ALL:
        return TETHER_ALGO_DIRECT;
    case TETHER_COLL_BARRIER:
        return small_algo(g, caps_of(g));
    case TETHER_COLL_SEND_RECV:
    case TETHER_COLL_KIND_COUNT:
        break;
    }
    return TETHER_ALGO_TREE;
}

int tether__algo_choose(const tether_group *g, tether_coll *c)
{
    int a = choose(g, c, settings());
    if (a < 0)
        return a;
    c->algo = log_choice(c, (tether_algo)a);
    return TETHER_OK;
}
