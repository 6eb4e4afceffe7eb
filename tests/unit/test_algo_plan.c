/* tests/unit/test_algo_plan.c - algorithm choice and step planning, without any transport: the
 * auto policy and TETHER_* overrides, partitions, ring neighbours and non-power-of-two folding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/algo/algo.h"
#include "core/algo/select.h"
#include "core/params.h"

static unsigned fake_caps;
static size_t fake_packet;

static unsigned caps_of(const tether__ep *ep)
{
    (void)ep;
    return fake_caps;
}

static size_t packet_of(const tether__ep *ep)
{
    (void)ep;
    return fake_packet;
}

static const tether__transport_ops fake_ops = {
    .name = "fake", .caps = caps_of, .packet = packet_of};

/* The group of n ranks over links of caps and packet: one per combination, kept from pick to pick
 * as a program keeps its group, so that a pick after a setting changed meets the plan of the one
 * before (a transport's caps and packet never change, core/transport.h). */
static tether_group *group_of(int n, unsigned caps, size_t packet)
{
    static struct made {
        unsigned caps;
        size_t packet;
        tether__world w;
        tether_group g;
    } made[128];
    static int nmade;
    for (int i = 0; i < nmade; i++)
        if (made[i].g.size == n && made[i].caps == caps && made[i].packet == packet)
            return &made[i].g;
    assert_true(nmade < 128);
    struct made *m = &made[nmade++];
    *m = (struct made){.caps = caps, .packet = packet, .w = {.ops = &fake_ops}};
    m->g = (tether_group){.world = &m->w, .size = n};
    return &m->g;
}

static tether__algo pick(tether__coll_kind kind, int n, size_t bytes, unsigned caps)
{
    tether_group *g = group_of(n, caps, fake_packet);
    tether__coll c = {.kind = kind, .count = bytes, .esize = 1, .dt = TETHER_UINT8};
    uint32_t sig;
    fake_caps = caps;
    tether__clear_error(); /* as every public call does first */
    if (tether__algo_choose(g, &c, &sig) != TETHER_OK)
        return TETHER__ALGO_AUTO; /* never chosen: the call fails with TETHER_ECONFIG */
    assert_int_not_equal(c.algo, TETHER__ALGO_AUTO);
    assert_int_equal(sig, tether__signature(&c)); /* the plan's, of this very call */
    return c.algo;
}

static void test_names(void **state)
{
    (void)state;
    for (int a = 0; a < TETHER__ALGO_COUNT; a++)
        assert_int_equal(tether__algo_parse(tether__algo_name((tether__algo)a)), a);
    assert_int_equal(tether__algo_parse(NULL), TETHER__ALGO_AUTO);
    assert_int_equal(tether__algo_parse(""), TETHER__ALGO_AUTO);
    assert_int_equal(tether__algo_parse("Ring"), -1);
    assert_int_equal(tether__algo_parse("rings"), -1);
    /* the names are TETHER_ALLREDUCE_ALGO's row's words, which must follow tether__algo */
    static const char *const names[TETHER__ALGO_COUNT] = {
        [TETHER__ALGO_AUTO] = "auto",     [TETHER__ALGO_RING] = "ring",
        [TETHER__ALGO_TREE] = "tree",     [TETHER__ALGO_BUTTERFLY] = "butterfly",
        [TETHER__ALGO_DIRECT] = "direct", [TETHER__ALGO_NEIGHBOR] = "neighbor",
    };
    for (int a = 0; a < TETHER__ALGO_COUNT; a++)
        assert_string_equal(tether__algo_name((tether__algo)a), names[a]);
    assert_null(tether__params[TETHER__P_ALLREDUCE_ALGO].words[TETHER__ALGO_COUNT]);
}

static void test_auto_policy(void **state)
{
    (void)state;
    unsetenv("TETHER_ALLREDUCE_ALGO");
    unsetenv("TETHER_TREE_BELOW");
    size_t small = TETHER__TREE_BELOW_DEFAULT - 1, large = TETHER__TREE_BELOW_DEFAULT;
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, small, TETHER__CAP_DIRECT),
                     TETHER__ALGO_TREE);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, large, TETHER__CAP_DIRECT),
                     TETHER__ALGO_DIRECT);
    assert_int_equal(
        pick(TETHER__COLL_ALL_REDUCE, TETHER__DIRECT_MAX_RANKS + 1, large, TETHER__CAP_DIRECT),
        TETHER__ALGO_RING);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, TETHER__NEIGHBOR_BELOW, 0),
                     TETHER__ALGO_RING);
    /* one host, 3 or more ranks but not 4: the ring in the band where the direct algorithm
     * outgrows caches */
    const unsigned one_host = TETHER__CAP_DIRECT | TETHER__CAP_ONE_HOST;
    size_t lo = TETHER__ONE_HOST_RING_MIN, hi = TETHER__ONE_HOST_RING_MAX;
    for (int n = 3; n <= TETHER__DIRECT_MAX_RANKS; n += n == 3 ? 2 : 1) {
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, lo - 1, one_host), TETHER__ALGO_DIRECT);
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, lo, one_host), TETHER__ALGO_RING);
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, hi - 1, one_host), TETHER__ALGO_RING);
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, hi, one_host), TETHER__ALGO_DIRECT);
    }
    /* one host, 2 or 4 ranks: the butterfly from the latency threshold to its maximum */
    size_t bmax = TETHER__ONE_HOST_BUTTERFLY_MAX;
    for (int n = 2; n <= 4; n += 2) {
        assert_int_equal(
            pick(TETHER__COLL_ALL_REDUCE, n, TETHER__ONE_HOST_TREE_BELOW - 1, one_host),
            TETHER__ALGO_TREE);
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, TETHER__ONE_HOST_TREE_BELOW, one_host),
                         TETHER__ALGO_BUTTERFLY);
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, bmax - 1, one_host),
                         TETHER__ALGO_BUTTERFLY);
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, bmax, one_host), TETHER__ALGO_DIRECT);
    }
    /* hosts apart keep the direct algorithm, which keeps every cable busy */
    for (int n = 2; n <= 4; n++)
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, lo, TETHER__CAP_DIRECT),
                         TETHER__ALGO_DIRECT);
    /* all_gather on a full mesh, by the whole result: recursive doubling for small results of 4,
     * 8, ... ranks whose messages cross sockets, else direct */
    const unsigned rings = one_host | TETHER__CAP_MEMORY_RINGS;
    for (int n = 2; n <= TETHER__DIRECT_MAX_RANKS; n++) {
        size_t most = TETHER__DOUBLING_GATHER_MAX / (size_t)n;
        int doubles = n >= 4 && (n & (n - 1)) == 0;
        assert_int_equal(pick(TETHER__COLL_ALL_GATHER, n, 1, TETHER__CAP_DIRECT),
                         doubles ? TETHER__ALGO_TREE : TETHER__ALGO_DIRECT);
        assert_int_equal(pick(TETHER__COLL_ALL_GATHER, n, most, one_host),
                         doubles ? TETHER__ALGO_TREE : TETHER__ALGO_DIRECT);
        assert_int_equal(pick(TETHER__COLL_ALL_GATHER, n, most + 1, TETHER__CAP_DIRECT),
                         TETHER__ALGO_DIRECT);
        assert_int_equal(pick(TETHER__COLL_ALL_GATHER, n, 1, rings), TETHER__ALGO_DIRECT);
    }
    /* all_reduce of 3 or more ranks on the rings of one host: the direct algorithm's one step
     * up to TETHER__RINGS_ONE_STEP_MAX, the tree above; 2 ranks and sockets keep the tree */
    for (int n = 2; n <= TETHER__DIRECT_MAX_RANKS; n++) {
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, TETHER__RINGS_ONE_STEP_MAX, rings),
                         n >= 3 ? TETHER__ALGO_DIRECT : TETHER__ALGO_TREE);
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, TETHER__RINGS_ONE_STEP_MAX + 1, rings),
                         TETHER__ALGO_TREE);
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, 8, one_host), TETHER__ALGO_TREE);
    }
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, TETHER__DIRECT_MAX_RANKS + 1, 8, rings),
                     TETHER__ALGO_TREE);
    assert_int_equal(pick(TETHER__COLL_REDUCE_SCATTER, 4, 1, 0), TETHER__ALGO_RING);
    /* broadcast on a full mesh: the chain, but the tree where readers copy large buffers */
    for (int n = 3; n <= 8; n++) {
        assert_int_equal(pick(TETHER__COLL_BROADCAST, n, 8, TETHER__CAP_DIRECT), TETHER__ALGO_RING);
        assert_int_equal(
            pick(TETHER__COLL_BROADCAST, n, TETHER__BCAST_TREE_BELOW_DEFAULT, TETHER__CAP_DIRECT),
            TETHER__ALGO_RING);
        assert_int_equal(pick(TETHER__COLL_BROADCAST, n, TETHER__BCAST_MEMORY_TREE_MIN - 1,
                              TETHER__CAP_DIRECT | TETHER__CAP_READS_MEMORY),
                         TETHER__ALGO_RING);
        assert_int_equal(pick(TETHER__COLL_BROADCAST, n, TETHER__BCAST_MEMORY_TREE_MIN,
                              TETHER__CAP_DIRECT | TETHER__CAP_READS_MEMORY),
                         TETHER__ALGO_TREE);
    }
    assert_int_equal(pick(TETHER__COLL_BROADCAST, 4, TETHER__BCAST_TREE_BELOW_DEFAULT, 0),
                     TETHER__ALGO_RING);
    assert_int_equal(pick(TETHER__COLL_ALL_TO_ALL, 4, large, 0), TETHER__ALGO_DIRECT);
    assert_int_equal(pick(TETHER__COLL_BARRIER, 4, 0, TETHER__CAP_DIRECT), TETHER__ALGO_TREE);
}

/* Only ring neighbours linked (no TETHER__CAP_DIRECT), 3 or more ranks: small messages take the
 * neighbour algorithms; 2 ranks, full meshes and large messages choose as before. */
static void test_auto_neighbours(void **state)
{
    (void)state;
    unsetenv("TETHER_ALLREDUCE_ALGO");
    unsetenv("TETHER_TREE_BELOW");
    size_t small = TETHER__TREE_BELOW_DEFAULT - 1, large = TETHER__TREE_BELOW_DEFAULT;
    const unsigned rings = TETHER__CAP_ONE_HOST | TETHER__CAP_MEMORY_RINGS;
    for (int n = 3; n <= 2 * TETHER__DIRECT_MAX_RANKS; n++) {
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, small, 0), TETHER__ALGO_NEIGHBOR);
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, 1, TETHER__CAP_ONE_HOST),
                         TETHER__ALGO_NEIGHBOR);
        assert_int_equal(pick(TETHER__COLL_BARRIER, n, 0, 0), TETHER__ALGO_NEIGHBOR);
        assert_int_equal(pick(TETHER__COLL_BROADCAST, n, TETHER__BCAST_TREE_BELOW_DEFAULT - 1, 0),
                         TETHER__ALGO_NEIGHBOR);
        /* all_gather: by the whole result, count bytes from each of n ranks */
        size_t most = TETHER__NEIGHBOR_GATHER_MAX / (size_t)n;
        assert_int_equal(pick(TETHER__COLL_ALL_GATHER, n, most, 0), TETHER__ALGO_NEIGHBOR);
        assert_int_equal(pick(TETHER__COLL_ALL_GATHER, n, most + 1, 0), TETHER__ALGO_RING);
        /* all_reduce: the neighbour algorithm up to TETHER__NEIGHBOR_BELOW, the ring from there */
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, large, 0), TETHER__ALGO_NEIGHBOR);
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, TETHER__NEIGHBOR_BELOW - 1, 0),
                         TETHER__ALGO_NEIGHBOR);
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, TETHER__NEIGHBOR_BELOW, 0),
                         TETHER__ALGO_RING);
        /* ...one host or not: a ring rank's caps speak for its own links only, so the one-host
         * butterfly would let ranks choose differently */
        assert_int_equal(
            pick(TETHER__COLL_ALL_REDUCE, n, TETHER__NEIGHBOR_BELOW, TETHER__CAP_ONE_HOST),
            TETHER__ALGO_RING);
        /* the rest as before */
        assert_int_equal(pick(TETHER__COLL_REDUCE_SCATTER, n, 1, 0), TETHER__ALGO_RING);
        assert_int_equal(pick(TETHER__COLL_ALL_TO_ALL, n, 1, 0), TETHER__ALGO_DIRECT);
        /* every peer direct, even past TETHER__DIRECT_MAX_RANKS: nothing changes */
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, n, small, TETHER__CAP_DIRECT),
                         TETHER__ALGO_TREE);
        assert_int_equal(pick(TETHER__COLL_BARRIER, n, 0, TETHER__CAP_DIRECT), TETHER__ALGO_TREE);
        assert_int_equal(pick(TETHER__COLL_BROADCAST, n, 1, TETHER__CAP_DIRECT), TETHER__ALGO_RING);
        assert_int_equal(pick(TETHER__COLL_ALL_GATHER, n, 1, TETHER__CAP_DIRECT | rings),
                         n <= TETHER__DIRECT_MAX_RANKS ? TETHER__ALGO_DIRECT : TETHER__ALGO_RING);
    }
    /* two ranks: the one neighbour is every peer */
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 2, small, 0), TETHER__ALGO_TREE);
    assert_int_equal(pick(TETHER__COLL_BARRIER, 2, 0, 0), TETHER__ALGO_TREE);
    assert_int_equal(pick(TETHER__COLL_BROADCAST, 2, 1, 0), TETHER__ALGO_TREE);
    assert_int_equal(pick(TETHER__COLL_ALL_GATHER, 2, 1, 0), TETHER__ALGO_RING);
    /* forcing all_reduce still wins, and leaves the others' neighbour choice alone */
    setenv("TETHER_ALLREDUCE_ALGO", "tree", 1);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, small, 0), TETHER__ALGO_TREE);
    assert_int_equal(pick(TETHER__COLL_BARRIER, 4, 0, 0), TETHER__ALGO_NEIGHBOR);
    setenv("TETHER_ALLREDUCE_ALGO", "neighbor", 1);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, large, TETHER__CAP_DIRECT),
                     TETHER__ALGO_NEIGHBOR);
    unsetenv("TETHER_ALLREDUCE_ALGO");
}

static void test_overrides(void **state)
{
    (void)state;
    setenv("TETHER_ALLREDUCE_ALGO", "butterfly", 1);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, 10, TETHER__CAP_DIRECT),
                     TETHER__ALGO_BUTTERFLY);
    /* forcing all_reduce leaves the others alone */
    assert_int_equal(pick(TETHER__COLL_ALL_GATHER, 4, 10, TETHER__CAP_DIRECT), TETHER__ALGO_TREE);
    assert_int_equal(pick(TETHER__COLL_ALL_GATHER, 3, 10, TETHER__CAP_DIRECT), TETHER__ALGO_DIRECT);
    setenv("TETHER_ALLREDUCE_ALGO", "fast", 1);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, 10, 0), TETHER__ALGO_AUTO);
    assert_non_null(strstr(tether_last_error(), "TETHER_ALLREDUCE_ALGO=\"fast\""));
    assert_non_null(strstr(tether_last_error(), "auto, ring, tree, butterfly, direct or neighbor"));
    assert_int_equal(pick(TETHER__COLL_BROADCAST, 4, 10, 0),
                     TETHER__ALGO_NEIGHBOR); /* not its setting */
    assert_int_equal(tether__algo_settings_check(), TETHER_ECONFIG);
    setenv("TETHER_ALLREDUCE_ALGO", "tree",
           1); /* changed back: chosen again, not the cached error */
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, 1 << 20, 0), TETHER__ALGO_TREE);
    unsetenv("TETHER_ALLREDUCE_ALGO");
    setenv("TETHER_TREE_BELOW", "100", 1);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, 99, TETHER__CAP_DIRECT), TETHER__ALGO_TREE);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, 99, 0), TETHER__ALGO_NEIGHBOR);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, 100, 0), TETHER__ALGO_RING);
    assert_int_equal(pick(TETHER__COLL_BROADCAST, 4, 100, 0), TETHER__ALGO_RING); /* sets both */
    assert_int_equal(pick(TETHER__COLL_BROADCAST, 4, 99, 0), TETHER__ALGO_NEIGHBOR);
    assert_int_equal(pick(TETHER__COLL_BROADCAST, 4, 99, TETHER__CAP_DIRECT), TETHER__ALGO_TREE);
    /* mccl's name counts when tether's is unset or empty */
    setenv("TETHER_TREE_BELOW", "", 1);
    setenv("MCCL_TREE_BELOW", "1000", 1);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, 999, 0), TETHER__ALGO_NEIGHBOR);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, 1000, 0), TETHER__ALGO_RING);
    unsetenv("MCCL_TREE_BELOW");
    /* malformed: no default in its place; the call reports TETHER_ECONFIG naming it */
    static const char *const bad[] = {"lots",
                                      "-5",
                                      "12abc",
                                      "99999999999999999999999",
                                      "1000000000000000000000000000000000000000x",
                                      NULL};
    for (const char *const *v = bad; *v; v++) {
        setenv("TETHER_TREE_BELOW", *v, 1);
        assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, 10, 0), TETHER__ALGO_AUTO);
        assert_non_null(strstr(tether_last_error(), "TETHER_TREE_BELOW"));
        assert_int_equal(pick(TETHER__COLL_BROADCAST, 4, 10, 0), TETHER__ALGO_AUTO);
        assert_int_equal(tether__algo_settings_check(), TETHER_ECONFIG);
        assert_non_null(strstr(tether_last_error(), "TETHER_TREE_BELOW"));
    }
    unsetenv("TETHER_TREE_BELOW");
    assert_int_equal(tether__algo_settings_check(), TETHER_OK);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, 10, 0), TETHER__ALGO_NEIGHBOR);
}

/* 2 ranks of one host take the butterfly where the vector needs two packets and its half one
 * (select.c's allreduce_packet_band), judged on the bytes that travel. */
static void test_packet_band(void **state)
{
    (void)state;
    const unsigned one_host = TETHER__CAP_DIRECT | TETHER__CAP_ONE_HOST;
    unsetenv("TETHER_ALLREDUCE_ALGO");
    unsetenv("TETHER_TREE_BELOW");
    fake_packet = 65451; /* Linux loopback: 65483-byte segments less the 32-byte frame header */
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 2, 65451, one_host), TETHER__ALGO_TREE);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 2, 65452, one_host), TETHER__ALGO_BUTTERFLY);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 2, 130901, one_host), TETHER__ALGO_BUTTERFLY);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 2, 130903, one_host), TETHER__ALGO_TREE);
    /* only 2 ranks, on one host, on a full mesh, with a packet known and no threshold set */
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, 65536, one_host), TETHER__ALGO_TREE);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 2, 65536, TETHER__CAP_DIRECT),
                     TETHER__ALGO_DIRECT);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 2, 65536, TETHER__CAP_ONE_HOST),
                     TETHER__ALGO_RING);
    setenv("TETHER_TREE_BELOW", "1000000", 1);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 2, 65536, one_host), TETHER__ALGO_TREE);
    unsetenv("TETHER_TREE_BELOW");
    fake_packet = 0;
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 2, 65536, one_host), TETHER__ALGO_TREE);
    /* float32 sent as bfloat16: 64 KiB of float32 travels as 32 KiB, one packet */
    fake_packet = 65451;
    tether__world w = {.ops = &fake_ops};
    tether_group g = {.world = &w, .size = 2};
    tether__coll c = {
        .kind = TETHER__COLL_ALL_REDUCE, .count = 16384, .esize = 4, .dt = TETHER_FLOAT32};
    uint32_t sig, butterfly_sig;
    fake_caps = one_host;
    assert_int_equal(tether__algo_choose(&g, &c, &butterfly_sig), TETHER_OK);
    assert_int_equal(c.algo, TETHER__ALGO_BUTTERFLY);
    c.wire_bf16 = 1;
    assert_int_equal(tether__algo_choose(&g, &c, &sig), TETHER_OK);
    assert_int_equal(c.algo, TETHER__ALGO_TREE);
    assert_int_equal(sig, tether__signature(&c));
    c.wire_bf16 = 0; /* the plan follows the call back: chosen and signed again */
    assert_int_equal(tether__algo_choose(&g, &c, &sig), TETHER_OK);
    assert_int_equal(c.algo, TETHER__ALGO_BUTTERFLY);
    assert_int_equal(sig, butterfly_sig);
    c.op = TETHER_MAX; /* the same choice, signed anew */
    assert_int_equal(tether__algo_choose(&g, &c, &sig), TETHER_OK);
    assert_int_equal(c.algo, TETHER__ALGO_BUTTERFLY);
    assert_int_equal(sig, tether__signature(&c));
    assert_int_not_equal(sig, butterfly_sig);
    fake_packet = 0;
}

/* The settings follow every way a program changes its environment between calls (select.c reads
 * them again only when the array, its length, its last entry or their own entries changed). */
static void test_settings_follow_env(void **state)
{
    (void)state;
    extern char **environ;
    static char algo_tree[] = "TETHER_ALLREDUCE_ALGO=tree",
                algo_ring[] = "TETHER_ALLREDUCE_ALGO=ring";
    const size_t mid = 1 << 20;
    unsetenv("TETHER_ALLREDUCE_ALGO");
    unsetenv("TETHER_TREE_BELOW");
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, mid, 0), TETHER__ALGO_RING);
    putenv(algo_tree); /* a new entry at the end */
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, mid, 0), TETHER__ALGO_TREE);
    setenv("ALGO_PLAN_UNRELATED", "1", 1); /* an unrelated one after it */
    putenv(algo_ring);                     /* its entry replaced, in place */
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, mid, 0), TETHER__ALGO_RING);
    unsetenv("TETHER_ALLREDUCE_ALGO"); /* the entries after it move down */
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, mid, 0), TETHER__ALGO_RING);
    setenv("TETHER_ALLREDUCE_ALGO", "butterfly", 1);
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, mid, 0), TETHER__ALGO_BUTTERFLY);
    unsetenv("ALGO_PLAN_UNRELATED"); /* one before it goes: it moves down */
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, mid, 0), TETHER__ALGO_BUTTERFLY);
    setenv("TETHER_ALLREDUCE_ALGO", "tree", 1); /* and changes after moving */
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, mid, 0), TETHER__ALGO_TREE);
    char **saved = environ; /* a program that swaps the whole array, or empties it */
    char *mine[] = {"PATH=/bin", "TETHER_ALLREDUCE_ALGO=direct", NULL};
    environ = mine;
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, mid, 0), TETHER__ALGO_DIRECT);
    environ = NULL;
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, mid, 0), TETHER__ALGO_RING);
    environ = saved;
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, mid, 0), TETHER__ALGO_TREE);
    unsetenv("TETHER_ALLREDUCE_ALGO");
    assert_int_equal(pick(TETHER__COLL_ALL_REDUCE, 4, mid, 0), TETHER__ALGO_RING);
}

static void test_partition(void **state)
{
    (void)state;
    for (size_t total = 0; total < 40; total++)
        for (size_t parts = 1; parts < 10; parts++) {
            size_t next = 0, lo = (size_t)-1, hi = 0;
            for (size_t i = 0; i < parts; i++) {
                size_t off, len;
                tether__part(total, parts, i, &off, &len);
                assert_int_equal(off, next); /* contiguous, in order */
                next = off + len;
                lo = len < lo ? len : lo;
                hi = len > hi ? len : hi;
            }
            assert_int_equal(next, total);
            assert_true(hi - lo <= 1); /* as even as possible */
        }
    assert_int_equal(tether__nsegments(0, 4, TETHER__SEG_BYTES), 1);
    assert_int_equal(tether__nsegments(TETHER__SEG_BYTES / 4, 4, TETHER__SEG_BYTES), 1);
    assert_int_equal(tether__nsegments(TETHER__SEG_BYTES / 4 + 1, 4, TETHER__SEG_BYTES), 2);
    assert_int_equal(tether__nsegments(1000, 2, 100), 20);
    assert_int_equal(tether__nsegments((size_t)1 << 30, 1, 1024), TETHER__MAX_SEGS);
}

/* Both ring directions: my successor's predecessor is me, and positions cover every rank once. */
static void test_ring_neighbours(void **state)
{
    (void)state;
    for (int n = 2; n <= 9; n++)
        for (int d = 0; d < 2; d++) {
            int seen[16] = {0};
            for (int j = 0; j < n; j++) {
                int r = tether__ring_rank_at(n, d, j);
                assert_true(r >= 0 && r < n);
                seen[r]++;
                int next = tether__ring_rank_at(n, d, j + 1),
                    prev = tether__ring_rank_at(n, d, j - 1);
                assert_int_equal(next, d == 0 ? (r + 1) % n : (r - 1 + n) % n);
                assert_int_equal(prev, d == 0 ? (r - 1 + n) % n : (r + 1) % n);
            }
            for (int r = 0; r < n; r++)
                assert_int_equal(seen[r], 1);
        }
}

/* Folding: survivors are numbered 0..pof2-1 exactly once, and fold_rank inverts the numbering. */
static void test_fold(void **state)
{
    (void)state;
    for (int n = 1; n <= 13; n++) {
        int survivors[16] = {0}, count = 0;
        for (int r = 0; r < n; r++) {
            tether_group g = {.size = n, .rank = r};
            tether__fold f = tether__fold_of(&g);
            assert_int_equal(f.pof2 + f.extra, n);
            assert_int_equal(1 << f.rounds, f.pof2);
            assert_true(f.pof2 <= n && 2 * f.pof2 > n);
            if (f.newrank < 0) {
                assert_true(r < 2 * f.extra && r % 2 == 0);
                continue;
            }
            assert_true(f.newrank < f.pof2);
            survivors[f.newrank]++;
            count++;
            assert_int_equal(tether__fold_rank(&f, f.newrank), r);
        }
        for (int s = 0; s < count; s++)
            assert_int_equal(survivors[s], 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_auto_policy),
        cmocka_unit_test(test_auto_neighbours),
        cmocka_unit_test(test_overrides),
        cmocka_unit_test(test_settings_follow_env),
        cmocka_unit_test(test_packet_band),
        cmocka_unit_test(test_partition),
        cmocka_unit_test(test_ring_neighbours),
        cmocka_unit_test(test_fold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
