/* core/algo/select.c - which algorithm runs a collective: TETHER_ALLREDUCE_ALGO, TETHER_TREE_BELOW,
 * the group size and the transport's links. The only place a choice is made (coll.c asks once per
 * call, before numbering it). The settings are read on every call through the parameter table's
 * accessor, which parses and validates them again only when the environment changed
 * (core/params.c), so a malformed one fails the call that uses it before anything is sent.
 *
 * Each group keeps, per kind of call, the last choice and the call's signature with what they came
 * from (a plan, core/group.h): the call's signed fields and the settings the choice read, as read
 * now. A call that matches takes both and skips the rest: the policy below, the transport's caps()
 * (a few loops over the peers) and the hash. Nothing else goes in: the group's size is fixed, and
 * so are caps() and packet() once the transport's open() has returned (core/transport.h). The
 * settings are compared by value, not by the accessor's per-thread epochs, so a group used from one
 * thread after another stays right; a plan is made only when the choice succeeded, so a malformed
 * setting the call uses never matches one and fails the call as before.
 *
 * Small messages where only ring neighbours are linked (a transport without TETHER__CAP_DIRECT, 3
 * or more ranks: the ring backend from 4 ranks, RDMA's ring mode): the neighbour algorithms
 * (NEIGHBOR), which talk to the two neighbours only, both ways at once, in ceil((n - 1) / 2) steps;
 * the latency algorithms below send to ranks 2, 4, ... away, and there every such message is
 * forwarded hop by hop (at N = 8, 7 links on recursive doubling's critical path against 4;
 * docs/tuning.md).
 *
 * all_reduce, auto: under TETHER_TREE_BELOW bytes (default TETHER__TREE_BELOW_DEFAULT, or
 * TETHER__NEIGHBOR_BELOW where only neighbours are linked, or TETHER__ONE_HOST_TREE_BELOW on a full
 * mesh of up to 4 ranks of one host) the neighbour algorithm where only neighbours are linked,
 * else the latency algorithm (recursive doubling: log2(n) messages); above it, on a full mesh
 * (TETHER__CAP_DIRECT) of up to TETHER__DIRECT_MAX_RANKS ranks the direct algorithm (two steps,
 * every link busy), else the ring (bandwidth-optimal, two links per rank, fine when only
 * neighbours are direct). Ranks all on one host (TETHER__CAP_ONE_HOST) share cores and caches, not
 * cables: on a full mesh, 2 or 4 of them take recursive halving-doubling (one peer per step) up to
 * TETHER__ONE_HOST_BUTTERFLY_MAX, and other counts of 3 or more the ring in the band of sizes where
 * the direct algorithm outgrows the shared caches (TETHER__ONE_HOST_RING_MIN..MAX); 2 of them take
 * the butterfly below the latency threshold too where the vector takes two of the links' packets
 * and its half one (allreduce_packet_band), unless TETHER_TREE_BELOW is set.
 * TETHER_ALLREDUCE_ALGO forces one for all_reduce only. Small vectors stay on the tree on a full
 * mesh of sockets: the direct algorithm's one-step path (one latency) lost to it at N = 3, 4 on
 * two shared cores, where waiting on n - 1 peers at once costs more than log2(n) rounds with one
 * (docs/tuning.md); on the rings of one host, where a message costs no system call, 3 or more
 * ranks take the one step up to TETHER__RINGS_ONE_STEP_MAX bytes. all_gather and reduce_scatter:
 * direct on such a mesh, else ring; all_gather whose result is at most TETHER__NEIGHBOR_GATHER_MAX
 * bytes where only neighbours are linked: neighbour; at most TETHER__DOUBLING_GATHER_MAX on a mesh
 * of 4, 8, ... ranks whose messages cross sockets: recursive doubling. all_to_all: direct (every
 * message at once). broadcast: the pipelined chain (RING), but the neighbour algorithm for small
 * messages where only neighbours are linked and the binomial tree for large ones where peers read
 * each other's memory (bcast_auto); under an explicit TETHER_TREE_BELOW the neighbour algorithm or
 * the tree, the chain above. barrier: neighbour where only neighbours are linked, else
 * dissemination. The choice goes into the call signature, so ranks whose settings differ get
 * TETHER_EMISMATCH. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/algo/algo.h"
#include "core/algo/select.h"
#include "core/errors.h"
#include "core/params.h"
#include "core/platform.h"

/* The names are the TETHER_ALLREDUCE_ALGO row's words, in tether__algo's order (core/env.c). */
const char *tether__algo_name(tether__algo a)
{
    return ((int)a >= 0 && a < TETHER__ALGO_COUNT)
               ? tether__params[TETHER__P_ALLREDUCE_ALGO].words[a]
               : "?";
}

int tether__algo_parse(const char *s)
{
    if (!s || !*s)
        return TETHER__ALGO_AUTO;
    for (int a = 0; a < TETHER__ALGO_COUNT; a++)
        if (strcmp(s, tether__algo_name((tether__algo)a)) == 0)
            return a;
    return -1;
}

/* The settings a choice may read, and the kinds that read them. A kind reads the last reads[kind]
 * of settings[]: all_reduce both, broadcast TETHER_TREE_BELOW, the others none. key_of() reads
 * exactly these into a plan's key, and choose() sees the settings only through that key
 * (setting()), so a plan's key holds everything its choice read: a kind that starts reading a
 * setting is keyed by it once it is in reads[], and reads it as unset until then. */
enum { S_ALGO, S_BELOW };
static const tether__param settings[TETHER__PLAN_SETTINGS] = {
    [S_ALGO] = TETHER__P_ALLREDUCE_ALGO, [S_BELOW] = TETHER__P_TREE_BELOW};
static const unsigned char reads[TETHER__COLL_KIND_COUNT] = {
    [TETHER__COLL_ALL_REDUCE] = 2, [TETHER__COLL_BROADCAST] = 1};

/* Setting i as k holds it: 1 and its value in *v where set, 0 and the default where unset; a
 * malformed one read again through the accessor, which records TETHER_ECONFIG naming it, so the
 * call that uses it fails before anything is sent. */
static int setting(const tether__plan_key *k, int i, long *v)
{
    if (k->set[i] < 0)
        return tether__param_long(settings[i], v);
    *v = k->value[i];
    return k->set[i];
}

int tether__algo_settings_check(void)
{
    for (int i = 0; i < TETHER__PLAN_SETTINGS; i++) {
        long v;
        TRY(tether__param_long(settings[i], &v));
    }
    return TETHER_OK;
}

static unsigned caps_of(const tether_group *g)
{
    const tether__world *w = g->world;
    return w->ops->caps(w->ep);
}

static int full_mesh(const tether_group *g, unsigned caps)
{
    return (caps & TETHER__CAP_DIRECT) && g->size <= TETHER__DIRECT_MAX_RANKS;
}

/* Only ring neighbours are linked: 3 or more ranks (with 2 the neighbour is every peer) on a
 * transport without TETHER__CAP_DIRECT. */
static int neighbours_only(const tether_group *g, unsigned caps)
{
    return !(caps & TETHER__CAP_DIRECT) && g->size >= 3;
}

/* The latency algorithm for small messages: the neighbour algorithm where only neighbours are
 * linked, else the tree (dissemination for the barrier). */
static tether__algo small_algo(const tether_group *g, unsigned caps)
{
    return neighbours_only(g, caps) ? TETHER__ALGO_NEIGHBOR : TETHER__ALGO_TREE;
}

/* All-reduce's default latency threshold: TETHER__NEIGHBOR_BELOW where only neighbours are linked,
 * TETHER__ONE_HOST_TREE_BELOW on a small full mesh of one host, else TETHER__TREE_BELOW_DEFAULT.
 * Under the smallest all give the latency algorithm, so small vectors ask no caps. */
static size_t allreduce_tree_below(const tether_group *g, size_t bytes)
{
    if (bytes < TETHER__TREE_BELOW_DEFAULT)
        return TETHER__TREE_BELOW_DEFAULT;
    unsigned caps = caps_of(g);
    if (neighbours_only(g, caps))
        return TETHER__NEIGHBOR_BELOW;
    return g->size <= TETHER__ONE_HOST_TREE_MAX_RANKS && full_mesh(g, caps) &&
                   (caps & TETHER__CAP_ONE_HOST)
               ? TETHER__ONE_HOST_TREE_BELOW
               : TETHER__TREE_BELOW_DEFAULT;
}

/* 2 ranks of one host whose vector (as it travels) takes two packets but its half one: recursive
 * doubling's one message of the whole vector would cost a second packet, and the receiver an
 * immediate acknowledgement and a second read, where the butterfly's messages of half fit one
 * each (measured: docs/perf/notes.md, core/algo/select.c). Only on a full mesh of one host, whose
 * links look alike from both ends, so both ranks choose alike; such links are loopback, whose
 * packets hold 64 KiB on Linux (elsewhere the backends report no packet yet), so smaller vectors
 * ask nothing. */
#define PACKET_BAND_MIN ((size_t)8 << 10)

static int allreduce_packet_band(const tether_group *g, const tether__coll *c)
{
    const tether__world *w = g->world;
    size_t wsize = tether__wire_of(c).wsize, bytes = c->count * wsize;
    if (g->size != 2 || bytes <= PACKET_BAND_MIN || !w->ops->packet)
        return 0;
    unsigned caps = caps_of(g);
    if (!full_mesh(g, caps) || !(caps & TETHER__CAP_ONE_HOST))
        return 0;
    size_t packet = w->ops->packet(w->ep), half = (c->count + 1) / 2 * wsize;
    return packet && bytes > packet && half <= packet;
}

/* Under the latency threshold the latency algorithm, but the direct one's single step for the
 * smallest vectors of 3 or more ranks on the rings of one host. Above it the ring where only
 * neighbours are linked; on a full mesh the butterfly where 2 or 4 ranks share one host and the
 * vector lies in its band, the ring in its band where 3 or more others do, else the direct
 * algorithm. */
static tether__algo allreduce_auto(const tether_group *g, size_t bytes, size_t tree_below)
{
    unsigned caps = caps_of(g);
    if (bytes < tree_below)
        return g->size >= 3 && bytes <= TETHER__RINGS_ONE_STEP_MAX && full_mesh(g, caps) &&
                       (caps & TETHER__CAP_MEMORY_RINGS)
                   ? TETHER__ALGO_DIRECT
                   : small_algo(g, caps);
    if (!full_mesh(g, caps))
        return TETHER__ALGO_RING;
    /* only on a full mesh is TETHER__CAP_ONE_HOST the same on every rank: a ring rank knows only
     * its neighbours, and ranks choosing differently would fail with TETHER_EMISMATCH */
    int one_host = (caps & TETHER__CAP_ONE_HOST) != 0;
    if (one_host && (g->size == 2 || g->size == 4) && bytes < TETHER__ONE_HOST_BUTTERFLY_MAX)
        return TETHER__ALGO_BUTTERFLY;
    return one_host && bytes >= TETHER__ONE_HOST_RING_MIN && bytes < TETHER__ONE_HOST_RING_MAX
               ? TETHER__ALGO_RING
               : TETHER__ALGO_DIRECT;
}

/* All-gather of result_bytes in all: the neighbour algorithm for small results where only
 * neighbours are linked; on a full mesh recursive doubling (TREE) for small results of 4, 8, ...
 * ranks whose messages go through sockets (not every link a ring in shared memory), else direct;
 * else the ring. Through sockets each message is a system call at both ends and a trip through the
 * kernel: at N = 4 doubling's 8 messages took 0.7-0.8 of the direct algorithm's 12's time up to
 * 256 KiB; through the rings of one host the two were level (docs/perf/notes.md). Above
 * TETHER__DOUBLING_GATHER_MAX direct keeps every link busy at once, as separate cables want. */
static tether__algo gather_auto(const tether_group *g, size_t result_bytes)
{
    unsigned caps = caps_of(g);
    if (neighbours_only(g, caps) && result_bytes <= TETHER__NEIGHBOR_GATHER_MAX)
        return TETHER__ALGO_NEIGHBOR;
    if (!full_mesh(g, caps))
        return TETHER__ALGO_RING;
    int pof2 = (g->size & (g->size - 1)) == 0;
    return g->size >= 4 && pof2 && result_bytes <= TETHER__DOUBLING_GATHER_MAX &&
                   !(caps & TETHER__CAP_MEMORY_RINGS)
               ? TETHER__ALGO_TREE
               : TETHER__ALGO_DIRECT;
}

/* Broadcast's default (TETHER_TREE_BELOW unset). Where only neighbours are linked, the neighbour
 * algorithm under TETHER__BCAST_TREE_BELOW_DEFAULT and the chain above. On a full mesh the
 * pipelined chain at every size, since each rank then receives from one and sends to one and
 * back-to-back broadcasts overlap (sockets, interleaved, N = 3, 4, 6, 8: 0.5-0.8x the binomial
 * tree's time from 8 B to 1 MiB; docs/perf/notes.md), except where the peers read each other's
 * memory, from TETHER__BCAST_MEMORY_TREE_MIN: a reader copies the whole buffer at once, while the
 * chain pays a descriptor round trip per segment (N = 3, 1 MiB: 0.25 ms tree, 0.34 ms chain). */
static tether__algo bcast_auto(const tether_group *g, size_t bytes)
{
    unsigned caps = caps_of(g);
    if (neighbours_only(g, caps))
        return bytes < TETHER__BCAST_TREE_BELOW_DEFAULT ? TETHER__ALGO_NEIGHBOR : TETHER__ALGO_RING;
    if (g->size == 2) /* one hop either way: the tree, without the chain's segments, as before */
        return bytes < TETHER__BCAST_TREE_BELOW_DEFAULT || (caps & TETHER__CAP_READS_MEMORY)
                   ? TETHER__ALGO_TREE
                   : TETHER__ALGO_RING;
    return bytes >= TETHER__BCAST_MEMORY_TREE_MIN && (caps & TETHER__CAP_READS_MEMORY)
               ? TETHER__ALGO_TREE
               : TETHER__ALGO_RING;
}

/* TETHER_VERBOSE=1 shows the choice; only when it changes (per thread and kind), not on every call:
 * the test inline, the message out of line. */
TETHER__NOINLINE static void log_choice(const tether__coll *c)
{
    static const char *const kinds[TETHER__COLL_KIND_COUNT] = {
        "all_reduce", "all_gather", "reduce_scatter", "broadcast",
        "all_to_all", "barrier",    "send/recv"};
    TLOG_INFO("%s of %zu bytes: %s algorithm", kinds[c->kind], c->count * c->esize,
              tether__algo_name(c->algo));
}

static void note_choice(const tether__coll *c)
{
    static _Thread_local tether__algo last[TETHER__COLL_KIND_COUNT];
    if (last[c->kind] != c->algo) {
        last[c->kind] = c->algo;
        log_choice(c);
    }
}

/* The algorithm of c on g under the settings in k (key_of), or TETHER_ECONFIG (recorded) when a
 * setting c uses is malformed. */
static int choose(const tether_group *g, const tether__coll *c, const tether__plan_key *k)
{
    size_t bytes = c->count * c->esize;
    long algo, below;
    int set;
    switch (c->kind) {
    case TETHER__COLL_ALL_REDUCE:
        TRY(setting(k, S_ALGO, &algo));
        if (algo != TETHER__ALGO_AUTO)
            return (int)algo;
        TRY(set = setting(k, S_BELOW, &below));
        if (!set && allreduce_packet_band(g, c))
            return TETHER__ALGO_BUTTERFLY;
        return allreduce_auto(g, bytes, set ? (size_t)below : allreduce_tree_below(g, bytes));
    case TETHER__COLL_ALL_GATHER:
        return gather_auto(g, bytes * (size_t)g->size);
    case TETHER__COLL_REDUCE_SCATTER:
        return full_mesh(g, caps_of(g)) ? TETHER__ALGO_DIRECT : TETHER__ALGO_RING;
    case TETHER__COLL_BROADCAST:
        TRY(set = setting(k, S_BELOW, &below));
        if (!set)
            return bcast_auto(g, bytes);
        return bytes < (size_t)below ? small_algo(g, caps_of(g)) : TETHER__ALGO_RING;
    case TETHER__COLL_ALL_TO_ALL:
        return TETHER__ALGO_DIRECT;
    case TETHER__COLL_BARRIER:
        return small_algo(g, caps_of(g));
    case TETHER__COLL_SEND_RECV:
    case TETHER__COLL_KIND_COUNT:
        break;
    }
    return TETHER__ALGO_TREE;
}

_Static_assert(TETHER__PLAN_KINDS == TETHER__COLL_KIND_COUNT, "a plan for every kind of call");

/* c's key under the settings as they are now: the signed fields, and the settings its kind reads
 * (reads[]), as tether__param_peek_values gives them. A malformed one is there as such (rc -1): a
 * call that uses it never made a plan (choose failed), so it misses and fails again. */
static void key_of(const tether__coll *c, tether__plan_key *k)
{
    *k = (tether__plan_key){
        .count = c->count, .dt = c->dt, .op = c->op, .root = c->root, .wire_bf16 = c->wire_bf16};
    int n = reads[c->kind], first = TETHER__PLAN_SETTINGS - n;
    if (n)
        tether__param_peek_values(settings + first, n, k->set + first, k->value + first);
}

static int key_same(const tether__plan_key *a, const tether__plan_key *b)
{
    for (int i = 0; i < TETHER__PLAN_SETTINGS; i++)
        if (a->set[i] != b->set[i] || a->value[i] != b->value[i])
            return 0;
    return a->count == b->count && a->dt == b->dt && a->op == b->op && a->root == b->root &&
           a->wire_bf16 == b->wire_bf16;
}

/* c takes p's algorithm and signature. */
static int take(const tether__plan *p, tether__coll *c, uint32_t *sig)
{
    c->algo = (tether__algo)p->algo;
    *sig = p->sig;
    note_choice(c);
    return TETHER_OK;
}

/* A plan for c under k, worked out anew into p, and taken: out of line, so that the policy's
 * registers and stack stay off the path of a call that matches its plan. */
TETHER__NOINLINE static int replan(const tether_group *g, tether__coll *c,
                                   const tether__plan_key *k, tether__plan *p, uint32_t *sig)
{
    int a = choose(g, c, k);
    if (a < 0)
        return a;
    c->algo = (tether__algo)a;
    *p = (tether__plan){.key = *k, .algo = a, .sig = tether__signature(c)};
    return take(p, c, sig);
}

int tether__algo_choose(tether_group *g, tether__coll *c, uint32_t *sig)
{
    tether__plan *p = &g->plans[c->kind];
    tether__plan_key k;
    key_of(c, &k);
    if (p->algo == TETHER__ALGO_AUTO || !key_same(&p->key, &k))
        return replan(g, c, &k, p, sig);
    return take(p, c, sig);
}
