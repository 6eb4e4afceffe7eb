/* core/algo/select.c - which algorithm runs a collective: TETHER_ALLREDUCE_ALGO, TETHER_TREE_BELOW,
 * the group size and the transport's links.
 *
 * all_reduce, auto: under TETHER_TREE_BELOW bytes the latency algorithm (recursive doubling:
 * log2(n) messages); above it, on a full mesh (TETHER_CAP_DIRECT) of up to TETHER_DIRECT_MAX_RANKS
 * ranks the direct algorithm (two steps, every link busy), else the ring (bandwidth-optimal, two
 * links per rank, fine when only neighbours are direct); with 3 or more ranks all on one host
 * (TETHER_CAP_ONE_HOST) the ring also in the band of sizes where the direct algorithm outgrows the
 * shared caches (TETHER_ONE_HOST_RING_MIN..MAX). TETHER_ALLREDUCE_ALGO forces one for
 * all_reduce only. Small vectors stay on the tree even on a full mesh: the direct algorithm's
 * one-step path (one latency) lost to it at N = 3, 4 on two shared cores, where waiting on n - 1
 * peers at once costs more than log2(n) rounds with one (docs/tuning.md). all_gather and
 * reduce_scatter: direct on such a mesh, else ring. all_to_all: direct (every message at once).
 * broadcast: binomial tree under TETHER_TREE_BELOW (default TETHER_BCAST_TREE_BELOW_DEFAULT),
 * pipelined chain above (RING).
 * barrier: dissemination. The choice goes into the call signature, so ranks whose settings
 * differ get TETHER_EMISMATCH. */
#include <errno.h>
#include <stdint.h> /* SIZE_MAX */
#include <stdlib.h>
#include <string.h>

#include "core/algo/algo.h"
#include "core/platform.h"

static const char *const algo_names[TETHER_ALGO_COUNT] = {
    [TETHER_ALGO_AUTO] = "auto",     [TETHER_ALGO_RING] = "ring",
    [TETHER_ALGO_TREE] = "tree",     [TETHER_ALGO_BUTTERFLY] = "butterfly",
    [TETHER_ALGO_DIRECT] = "direct",
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

/* TETHER_TREE_BELOW's text as a byte count in *out; NULL or empty is dflt. -1 when malformed
 * (docs/env.md: TETHER_ECONFIG, never the default in its place). */
static int parse_tree_below(const char *v, size_t dflt, size_t *out)
{
    *out = dflt;
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || x > SIZE_MAX)
        return -1;
    *out = (size_t)x;
    return 0;
}

/* Read on every call (so a program, or a test, can change it between calls). */
int tether__tree_below(size_t dflt, size_t *out)
{
    return parse_tree_below(tether__env("TETHER_TREE_BELOW", NULL), dflt, out);
}

int tether__algo_env_check(void)
{
    const char *algo = tether__env("TETHER_ALLREDUCE_ALGO", NULL);
    const char *below = tether__env("TETHER_TREE_BELOW", NULL);
    size_t x;
    if (tether__algo_parse(algo) < 0)
        return tether__fail(
            TETHER_ECONFIG,
            "TETHER_ALLREDUCE_ALGO=\"%s\": expected auto, ring, tree, butterfly or direct", algo);
    if (parse_tree_below(below, 0, &x) < 0)
        return tether__fail(TETHER_ECONFIG,
                            "TETHER_TREE_BELOW=\"%s\": expected a number of bytes (0 or more)",
                            below);
    return TETHER_OK;
}

/* s past prefix p (of len bytes), or NULL when s does not start with it. */
static const char *after(const char *s, const char *p, size_t len)
{
    return s[0] == p[0] && strncmp(s, p, len) == 0 ? s + len
                                                   : NULL; /* one compare for most names */
}
#define AFTER(s, p) after((s), (p), sizeof(p) - 1)

/* The all-reduce settings, read on every call like tether__tree_below, but both in one pass over
 * the environment, finding what getenv would (the first entry of each name): two getenv calls were
 * a fifth of a small all-reduce's instructions (docs/tuning.md). */
static void allreduce_env(const char **algo, const char **below)
{
    const char *alias[2] = {NULL, NULL}; /* mccl's names, read when tether's are unset */
    *algo = *below = NULL;
    for (char **e = tether__environ; e && *e; e++) {
        const char *rest = AFTER(*e, "TETHER_"), *v;
        int mccl = !rest && (rest = AFTER(*e, "MCCL_")) != NULL;
        const char **algo_to = mccl ? &alias[0] : algo, **below_to = mccl ? &alias[1] : below;
        if (!rest)
            continue;
        if (!*algo_to && (v = AFTER(rest, "ALLREDUCE_ALGO=")))
            *algo_to = v;
        else if (!*below_to && (v = AFTER(rest, "TREE_BELOW=")))
            *below_to = v;
    }
    *algo = *algo && **algo ? *algo : alias[0];
    *below = *below && **below ? *below : alias[1];
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

/* On a full mesh the direct algorithm, except where 3 or more ranks share one host's caches and
 * the vector lies in the ring's band. */
static tether_algo allreduce_auto(const tether_group *g, size_t bytes, size_t tree_below)
{
    if (bytes < tree_below) /* first: the small-message path asks nothing else */
        return TETHER_ALGO_TREE;
    unsigned caps = caps_of(g);
    if (!full_mesh(g, caps))
        return TETHER_ALGO_RING;
    int shared_caches = (caps & TETHER_CAP_ONE_HOST) && g->size > 2;
    return shared_caches && bytes >= TETHER_ONE_HOST_RING_MIN && bytes < TETHER_ONE_HOST_RING_MAX
               ? TETHER_ALGO_RING
               : TETHER_ALGO_DIRECT;
}

/* Broadcast's default tree threshold for a message of bytes. Where the peers read each other's
 * memory, the tree at every size: a reader copies the whole buffer at once, while the chain pays a
 * descriptor round trip per segment (N = 3, 16 MiB: 2.7 ms tree, 4.6 ms chain; docs/tuning.md).
 * Through sockets the chain keeps the links streaming (the tree took 2.8x as long at N = 3,
 * 64 MiB). Under the socket threshold both give the tree, so small broadcasts ask no caps. */
static size_t bcast_tree_below(const tether_group *g, size_t bytes)
{
    if (bytes < TETHER_BCAST_TREE_BELOW_DEFAULT)
        return TETHER_BCAST_TREE_BELOW_DEFAULT;
    return (caps_of(g) & TETHER_CAP_READS_MEMORY) ? SIZE_MAX : TETHER_BCAST_TREE_BELOW_DEFAULT;
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

static tether_algo choose(const tether_group *g, const tether_coll *c)
{
    size_t bytes = c->count * c->esize;
    const char *algo, *below;
    size_t tree_below;
    int forced;
    switch (c->kind) {
    case TETHER_COLL_ALL_REDUCE:
        allreduce_env(&algo, &below);
        forced = tether__algo_parse(algo);
        if (forced < 0)
            return TETHER_ALGO_AUTO;
        if (forced != TETHER_ALGO_AUTO)
            return (tether_algo)forced;
        if (parse_tree_below(below, TETHER_TREE_BELOW_DEFAULT, &tree_below) < 0)
            return TETHER_ALGO_AUTO;
        return allreduce_auto(g, bytes, tree_below);
    case TETHER_COLL_ALL_GATHER:
    case TETHER_COLL_REDUCE_SCATTER:
        return full_mesh(g, caps_of(g)) ? TETHER_ALGO_DIRECT : TETHER_ALGO_RING;
    case TETHER_COLL_BROADCAST:
        if (tether__tree_below(bcast_tree_below(g, bytes), &tree_below) < 0)
            return TETHER_ALGO_AUTO;
        return bytes < tree_below ? TETHER_ALGO_TREE : TETHER_ALGO_RING;
    case TETHER_COLL_ALL_TO_ALL:
        return TETHER_ALGO_DIRECT;
    case TETHER_COLL_BARRIER:
    case TETHER_COLL_SEND_RECV:
    case TETHER_COLL_KIND_COUNT:
        break;
    }
    return TETHER_ALGO_TREE;
}

/* AUTO back means TETHER_ALLREDUCE_ALGO or TETHER_TREE_BELOW is malformed:
 * tether__algo_env_check says which. */
tether_algo tether__algo_select(const tether_group *g, const tether_coll *c)
{
    return log_choice(c, choose(g, c));
}
