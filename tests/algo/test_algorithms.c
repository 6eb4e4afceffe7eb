/* tests/algo/test_algorithms.c - every collective algorithm, N = 1..8 ranks as threads over the
 * in-process transport, through the public API, checked against a serial reference.
 *
 * Inputs are small integers, so every reduction is exact in every dtype and the result cannot
 * depend on the order an algorithm reduces in: any difference from the reference is a bug. Each
 * world (one thread per rank) runs a whole sweep of counts, dtypes and ops; a thread never calls a
 * cmocka assertion (they longjmp), it records its first failure for the main thread to report. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/coll.h"
#include "core/group.h"
#include "core/reduce.h"
#include "core/registry.h"
#include "tests/support/memtransport.h"
#include "tether.h"

/* ---- worlds of threads ---- */

typedef struct world world;
typedef void (*rank_body)(tether_group *g, world *w);

struct world {
    int n;
    unsigned caps;
    int wire_bf16;
    rank_body body;
    char token[64];
    pthread_mutex_t lock;
    char failure[1024];    /* the first failure of any rank */
    atomic_int arrived[4]; /* barrier test: ranks past each stage */
    float *results[8];     /* bf16 test: every rank's result, compared across ranks */
    long elapsed_ms[8];    /* fault test: how long each rank took to fail */
    int codes[8];          /* fault test: what each rank got */
    size_t rank0_count;    /* mismatch test: the count rank 0 passes */
    int call_timeout_ms;   /* 0: 10 s */
};

typedef struct rank_arg {
    world *w;
    int rank;
} rank_arg;

static void failf(world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(world *w, const char *fmt, ...)
{
    pthread_mutex_lock(&w->lock);
    if (!w->failure[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->failure, sizeof w->failure, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&w->lock);
}

static void *rank_main(void *p)
{
    rank_arg *a = p;
    world *w = a->w;
    tether__config cfg = {.rank = a->rank,
                          .size = w->n,
                          .timeout_ms = 10000,
                          .call_timeout_ms = w->call_timeout_ms ? w->call_timeout_ms : 10000,
                          .spin_us = 20,
                          .wire_bf16 = w->wire_bf16};
    snprintf(cfg.job_token, sizeof cfg.job_token, "%s", w->token);
    tether_group *g = NULL;
    tether__transport_ops ops = tether__memt_ops; /* with its defaults, as the registry hands out */
    tether__transport_defaults(&ops);
    int rc = tether__world_open(&ops, &cfg, &g);
    if (rc != TETHER_OK) {
        failf(w, "rank %d: world_open: %s: %s", a->rank, tether_err_name(rc), tether_last_error());
        return NULL;
    }
    tether__memt_set_caps(g->world->ep, w->caps);
    w->body(g, w);
    tether_group_free(g);
    return NULL;
}

static void run_world(world *w)
{
    static atomic_int worlds;
    pthread_t threads[8];
    rank_arg args[8];
    pthread_mutex_init(&w->lock, NULL);
    snprintf(w->token, sizeof w->token, "algo-test-%d", atomic_fetch_add(&worlds, 1));
    for (int r = 0; r < w->n; r++) {
        args[r] = (rank_arg){w, r};
        assert_int_equal(pthread_create(&threads[r], NULL, rank_main, &args[r]), 0);
    }
    for (int r = 0; r < w->n; r++)
        pthread_join(threads[r], NULL);
    pthread_mutex_destroy(&w->lock);
    if (w->failure[0])
        fail_msg("N=%d caps=%u algo=%s: %s", w->n, w->caps, getenv("TETHER_ALLREDUCE_ALGO"),
                 w->failure);
}

/* ---- inputs and the serial reference ---- */

/* Rank r's element i for op, as a small integer: products stay tiny, sums stay exact. */
static int value(int r, size_t i, tether_op op)
{
    if (op == TETHER_PROD)
        return (r + (int)(i % 7)) % 3 == 0 ? 2 : 1;
    return (int)((r * 7 + i * 3) % 5) - (op == TETHER_MIN ? 2 : 0);
}

static void store(tether_dtype dt, void *buf, size_t i, int v, tether_op op)
{
    char *p = (char *)buf + i * tether_dtype_size(dt);
    switch (dt) {
    case TETHER_BOOL:
        *(uint8_t *)p = (uint8_t)(v & 1);
        break;
    case TETHER_INT8:
    case TETHER_UINT8:
        *(int8_t *)p = (int8_t)v;
        break;
    case TETHER_INT16:
    case TETHER_UINT16:
        *(int16_t *)p = (int16_t)v;
        break;
    case TETHER_INT32:
    case TETHER_UINT32:
        *(int32_t *)p = v;
        break;
    case TETHER_INT64:
    case TETHER_UINT64:
        *(int64_t *)p = v;
        break;
    case TETHER_FLOAT16:
        *(uint16_t *)p = tether__float_to_half((float)v);
        break;
    case TETHER_BFLOAT16:
        *(uint16_t *)p = tether__float_to_bf16((float)v);
        break;
    case TETHER_FLOAT32:
        *(float *)p = (float)v;
        break;
    case TETHER_FLOAT64:
        *(double *)p = v;
        break;
    case TETHER_COMPLEX64: /* PROD: 1 or i, so products are exact; SUM: (v, v - 1) */
        ((float *)p)[0] = op == TETHER_PROD ? (float)(v == 1) : (float)v;
        ((float *)p)[1] = op == TETHER_PROD ? (float)(v != 1) : (float)(v - 1);
        break;
    default:
        break;
    }
}

/* count elements of "rank" r's input; seed shifts the pattern (blocks, roots). */
static void *input(tether_dtype dt, tether_op op, int r, size_t count, size_t seed)
{
    char *buf = malloc(count * tether_dtype_size(dt) + 1);
    for (size_t i = 0; i < count; i++)
        store(dt, buf, i, value(r, i + seed, op), op);
    return buf;
}

/* The reduction over n ranks' inputs, serially. */
static void *reference(tether_dtype dt, tether_op op, int n, size_t count)
{
    char *ref = input(dt, op, 0, count, 0);
    for (int r = 1; r < n; r++) {
        char *x = input(dt, op, r, count, 0);
        tether__reduce(ref, x, count, dt, op);
        free(x);
    }
    return ref;
}

static int check_rc(tether_group *g, world *w, int rc, const char *what)
{
    if (rc != TETHER_OK)
        failf(w, "rank %d: %s -> %s: %s", g->rank, what, tether_err_name(rc), tether_last_error());
    return rc == TETHER_OK;
}

/* Floats compare by value: -0 and +0 are equal (the sign of a zero product depends on order). */
static int same(const char *a, const char *b, tether_dtype dt)
{
    switch (dt) {
    case TETHER_FLOAT32:
        return *(const float *)a == *(const float *)b;
    case TETHER_FLOAT64:
        return *(const double *)a == *(const double *)b;
    case TETHER_COMPLEX64:
        return same(a, b, TETHER_FLOAT32) && same(a + 4, b + 4, TETHER_FLOAT32);
    case TETHER_FLOAT16:
        return tether__half_to_float(*(const uint16_t *)a) ==
               tether__half_to_float(*(const uint16_t *)b);
    case TETHER_BFLOAT16:
        return tether__bf16_to_float(*(const uint16_t *)a) ==
               tether__bf16_to_float(*(const uint16_t *)b);
    default:
        return memcmp(a, b, tether_dtype_size(dt)) == 0;
    }
}

static void check_equal(tether_group *g, world *w, const void *got, const void *want, size_t count,
                        tether_dtype dt, const char *what)
{
    size_t es = tether_dtype_size(dt);
    for (size_t i = 0; i < count; i++)
        if (!same((const char *)got + i * es, (const char *)want + i * es, dt)) {
            failf(w, "rank %d: %s: element %zu of %zu differs from the reference", g->rank, what, i,
                  count);
            return;
        }
}

/* ---- one check per collective ---- */

static void all_reduce(tether_group *g, world *w, tether_dtype dt, tether_op op, size_t count,
                       int in_place)
{
    char what[128];
    snprintf(what, sizeof what, "all_reduce dtype %d op %d count %zu%s", (int)dt, (int)op, count,
             in_place ? " in place" : "");
    char *send = input(dt, op, g->rank, count, 0),
         *recv = malloc(count * tether_dtype_size(dt) + 1);
    char *ref = reference(dt, op, g->size, count);
    if (check_rc(g, w, tether_all_reduce(g, send, in_place ? send : recv, count, dt, op), what))
        check_equal(g, w, in_place ? send : recv, ref, count, dt, what);
    free(send);
    free(recv);
    free(ref);
}

static void all_gather(tether_group *g, world *w, tether_dtype dt, size_t count)
{
    size_t es = tether_dtype_size(dt), n = (size_t)g->size;
    char *send = input(dt, TETHER_SUM, g->rank, count, 0), *recv = malloc(n * count * es + 1);
    if (check_rc(g, w, tether_all_gather(g, send, recv, count, dt), "all_gather"))
        for (size_t b = 0; b < n; b++) {
            char *want = input(dt, TETHER_SUM, (int)b, count, 0);
            check_equal(g, w, recv + b * count * es, want, count, dt, "all_gather block");
            free(want);
        }
    free(send);
    free(recv);
}

static void reduce_scatter(tether_group *g, world *w, tether_dtype dt, tether_op op, size_t count)
{
    size_t es = tether_dtype_size(dt), n = (size_t)g->size;
    char *send = input(dt, op, g->rank, n * count, 0), *recv = malloc(count * es + 1);
    char *ref = reference(dt, op, g->size, n * count);
    if (check_rc(g, w, tether_reduce_scatter(g, send, recv, count, dt, op), "reduce_scatter"))
        check_equal(g, w, recv, ref + (size_t)g->rank * count * es, count, dt, "reduce_scatter");
    free(send);
    free(recv);
    free(ref);
}

static void broadcast(tether_group *g, world *w, tether_dtype dt, size_t count, int root)
{
    char *buf = input(dt, TETHER_SUM, g->rank, count, 11),
         *want = input(dt, TETHER_SUM, root, count, 11);
    if (check_rc(g, w, tether_broadcast(g, buf, count, dt, root), "broadcast"))
        check_equal(g, w, buf, want, count, dt, "broadcast");
    free(buf);
    free(want);
}

static void all_to_all(tether_group *g, world *w, tether_dtype dt, size_t count)
{
    size_t es = tether_dtype_size(dt), n = (size_t)g->size;
    char *send = malloc(n * count * es + 1), *recv = malloc(n * count * es + 1);
    for (size_t j = 0; j < n; j++) { /* block j of rank r: pattern seeded by (r, j) */
        char *blk = input(dt, TETHER_SUM, g->rank, count, j * 131);
        memcpy(send + j * count * es, blk, count * es);
        free(blk);
    }
    if (check_rc(g, w, tether_all_to_all(g, send, recv, count, dt), "all_to_all"))
        for (size_t i = 0; i < n; i++) {
            char *want = input(dt, TETHER_SUM, (int)i, count, (size_t)g->rank * 131);
            check_equal(g, w, recv + i * count * es, want, count, dt, "all_to_all block");
            free(want);
        }
    free(send);
    free(recv);
}

/* A barrier that lets a rank through early shows as a stage counter below n. */
static void barriers(tether_group *g, world *w)
{
    for (int stage = 0; stage < 4; stage++) {
        atomic_fetch_add(&w->arrived[stage], 1);
        if (!check_rc(g, w, tether_barrier(g), "barrier"))
            return;
        if (atomic_load(&w->arrived[stage]) != g->size)
            failf(w, "rank %d left barrier %d with only %d of %d ranks arrived", g->rank, stage,
                  atomic_load(&w->arrived[stage]), g->size);
    }
}

/* ---- the sweep every world runs ---- */

#define NALGOS(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct combo {
    tether_dtype dt;
    tether_op op;
} combo;

static const combo reduce_combos[] = {
    {TETHER_FLOAT32, TETHER_SUM}, {TETHER_FLOAT32, TETHER_MAX},    {TETHER_FLOAT64, TETHER_PROD},
    {TETHER_INT32, TETHER_MIN},   {TETHER_INT8, TETHER_SUM},       {TETHER_UINT64, TETHER_PROD},
    {TETHER_FLOAT16, TETHER_SUM}, {TETHER_BFLOAT16, TETHER_MAX},   {TETHER_BOOL, TETHER_SUM},
    {TETHER_BOOL, TETHER_PROD},   {TETHER_COMPLEX64, TETHER_PROD}, {TETHER_UINT16, TETHER_SUM},
};
#define NCOMBOS (sizeof reduce_combos / sizeof reduce_combos[0])

static void sweep(tether_group *g, world *w)
{
    int n = g->size;
    size_t counts[] = {0, 1, 7, (size_t)n - 1, (size_t)n + 1, 1000};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0] && !w->failure[0]; k++) {
        size_t count = counts[k];
        for (size_t i = 0; i < NCOMBOS; i++) {
            all_reduce(g, w, reduce_combos[i].dt, reduce_combos[i].op, count, 0);
            all_reduce(g, w, reduce_combos[i].dt, reduce_combos[i].op, count, 1);
        }
        all_gather(g, w, TETHER_FLOAT32, count);
        all_gather(g, w, TETHER_INT16, count);
        reduce_scatter(g, w, TETHER_FLOAT32, TETHER_SUM, count);
        reduce_scatter(g, w, TETHER_INT64, TETHER_MAX, count);
        reduce_scatter(g, w, TETHER_FLOAT16, TETHER_SUM, count);
        broadcast(g, w, TETHER_FLOAT64, count, 0);
        broadcast(g, w, TETHER_UINT8, count, n - 1);
        broadcast(g, w, TETHER_INT32, count, n / 2);
        all_to_all(g, w, TETHER_INT32, count);
    }
    barriers(g, w);
}

/* One world per size, for the algorithm settings in force. */
static void sweep_sizes(const char *algo, unsigned caps, const char *tree_below)
{
    setenv("TETHER_ALLREDUCE_ALGO", algo, 1);
    if (tree_below)
        setenv("TETHER_TREE_BELOW", tree_below, 1);
    else
        unsetenv("TETHER_TREE_BELOW");
    for (int n = 1; n <= 8; n++) {
        world w = {.n = n, .caps = caps, .body = sweep};
        run_world(&w);
    }
    unsetenv("TETHER_ALLREDUCE_ALGO");
    unsetenv("TETHER_TREE_BELOW");
}

/* ring all-reduce; no direct links, so all_gather/reduce_scatter take the ring too; chain broadcast
 */
static void test_ring(void **state)
{
    (void)state;
    sweep_sizes("ring", 0, "0");
}

static void test_tree(void **state)
{
    (void)state;
    sweep_sizes("tree", TETHER__CAP_DIRECT, NULL);
}

static void test_butterfly(void **state)
{
    (void)state;
    sweep_sizes("butterfly", 0, NULL);
}

/* direct all-reduce; full mesh, so all_gather/reduce_scatter go direct too */
static void test_direct(void **state)
{
    (void)state;
    sweep_sizes("direct", TETHER__CAP_DIRECT, "0");
}

static void test_auto(void **state)
{
    (void)state;
    sweep_sizes("auto", TETHER__CAP_DIRECT, NULL);
}

/* neighbour all-reduce; no direct links, so small all_gather, broadcast and the barrier take the
 * neighbour algorithms too (N >= 3) */
static void test_neighbor(void **state)
{
    (void)state;
    sweep_sizes("neighbor", 0, NULL);
}

/* auto without direct links: the neighbour algorithms for small messages from N = 3 */
static void test_auto_neighbours(void **state)
{
    (void)state;
    sweep_sizes("auto", 0, NULL);
}

/* ---- large vectors: many segments, both ring directions, every algorithm ---- */

#define LARGE (((size_t)1 << 20) + 3)

static void large_body(tether_group *g, world *w)
{
    all_reduce(g, w, TETHER_FLOAT32, TETHER_SUM, LARGE, 1);
    all_reduce(g, w, TETHER_INT32, TETHER_MAX, LARGE, 0);
    all_gather(g, w, TETHER_FLOAT32, LARGE / (size_t)g->size);
    reduce_scatter(g, w, TETHER_FLOAT32, TETHER_SUM, LARGE / (size_t)g->size);
    broadcast(g, w, TETHER_FLOAT32, LARGE, 1);
}

static void test_large(void **state)
{
    (void)state;
    static const char *const algos[] = {"ring", "direct", "butterfly", "tree", "neighbor"};
    for (int a = 0; a < NALGOS(algos); a++) {
        setenv("TETHER_ALLREDUCE_ALGO", algos[a], 1);
        for (int n = 3; n <= 4; n++) {
            world w = {.n = n, .caps = a % 2 ? TETHER__CAP_DIRECT : 0, .body = large_body};
            run_world(&w);
        }
    }
    unsetenv("TETHER_ALLREDUCE_ALGO");
}

/* ---- bfloat16 on the wire ---- */

/* Exact with small integers; with arbitrary floats close to the float32 sum and the same bits on
 * every rank. */
static void bf16_body(tether_group *g, world *w)
{
    static const size_t counts[] = {0, 1, 7, 1000, 100003};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        size_t count = counts[k];
        all_reduce(g, w, TETHER_FLOAT32, TETHER_SUM, count, k % 2);
        float *x = malloc(count * sizeof *x + 1), *exact = calloc(count + 1, sizeof *exact);
        for (size_t i = 0; i < count; i++) {
            for (int r = 0; r < g->size; r++) /* the float32 sum of every rank's input */
                exact[i] += (float)((r * 2654435761u + i * 40503u) % 20001) / 10000.0f - 1.0f;
            x[i] = (float)((g->rank * 2654435761u + i * 40503u) % 20001) / 10000.0f - 1.0f;
        }
        if (check_rc(g, w, tether_all_reduce(g, x, x, count, TETHER_FLOAT32, TETHER_SUM),
                     "bf16 all_reduce"))
            for (size_t i = 0; i < count; i++)
                if (!(x[i] - exact[i] < 0.02f * (float)g->size &&
                      exact[i] - x[i] < 0.02f * (float)g->size)) {
                    failf(w, "rank %d: bf16 wire element %zu: %g, float32 sum %g", g->rank, i, x[i],
                          exact[i]);
                    break;
                }
        free(exact);
        if (count == 100003) { /* kept for the cross-rank comparison */
            w->results[g->rank] = x;
            continue;
        }
        free(x);
    }
}

static void test_bf16_wire(void **state)
{
    (void)state;
    static const char *const algos[] = {"ring", "direct", "butterfly", "tree", "neighbor"};
    static const int sizes[] = {2, 3, 5, 8};
    for (int a = 0; a < NALGOS(algos); a++) {
        setenv("TETHER_ALLREDUCE_ALGO", algos[a], 1);
        for (int s = 0; s < 4; s++) {
            world w = {
                .n = sizes[s], .caps = TETHER__CAP_DIRECT, .wire_bf16 = 1, .body = bf16_body};
            run_world(&w);
            for (int r = 1; r < w.n; r++)
                if (memcmp(w.results[0], w.results[r], 100003 * sizeof(float)) != 0)
                    fail_msg("bf16 wire, %s, N=%d: rank %d's result differs from rank 0's",
                             algos[a], w.n, r);
            for (int r = 0; r < w.n; r++)
                free(w.results[r]);
        }
    }
    unsetenv("TETHER_ALLREDUCE_ALGO");
}

/* ---- the neighbour all-reduce reduces in rank order ---- */

/* Rank r's element i: floats whose sums round, so another order of reduction gives other bits. */
static float noisy(int r, size_t i)
{
    return (float)((r * 2654435761u + i * 40503u) % 20011) / 7.0f - 1400.0f;
}

#define BITS_COUNT 1001

/* Out of place on even ranks, in place on odd ones; kept for the cross-rank comparison. */
static void bits_body(tether_group *g, world *w)
{
    float *x = malloc(BITS_COUNT * sizeof *x), *y = malloc(BITS_COUNT * sizeof *y);
    for (size_t i = 0; i < BITS_COUNT; i++)
        x[i] = noisy(g->rank, i);
    float *out = g->rank % 2 ? x : y;
    if (check_rc(g, w, tether_all_reduce(g, x, out, BITS_COUNT, TETHER_FLOAT32, TETHER_SUM),
                 "neighbor all_reduce of noisy floats"))
        for (size_t i = 0; i < BITS_COUNT; i++) {
            float want = noisy(0, i); /* the float32 sum in rank order 0 .. n - 1 */
            for (int r = 1; r < g->size; r++)
                want += noisy(r, i);
            if (memcmp(&out[i], &want, sizeof want) != 0) {
                failf(w, "rank %d: element %zu is %.9g, the sum in rank order %.9g", g->rank, i,
                      out[i], want);
                break;
            }
        }
    w->results[g->rank] = out;
    free(out == x ? y : x);
}

/* Every rank gets the same bits, those of the serial sum in rank order. */
static void test_neighbor_bits(void **state)
{
    (void)state;
    setenv("TETHER_ALLREDUCE_ALGO", "neighbor", 1);
    for (int n = 2; n <= 7; n++) {
        world w = {.n = n, .body = bits_body};
        run_world(&w);
        for (int r = 1; r < n; r++)
            if (memcmp(w.results[0], w.results[r], BITS_COUNT * sizeof(float)) != 0)
                fail_msg("neighbor, N=%d: rank %d's result differs from rank 0's", n, r);
        for (int r = 0; r < n; r++)
            free(w.results[r]);
    }
    unsetenv("TETHER_ALLREDUCE_ALGO");
}

/* ---- signed zeros and NaNs: every rank gets the same bits ---- */

typedef struct zero_dtype {
    tether_dtype dt;
    uint64_t neg_zero, nan; /* -0 and the canonical NaN */
} zero_dtype;

static const zero_dtype zero_dtypes[] = {
    {TETHER_FLOAT16, 0x8000, 0x7e00},
    {TETHER_BFLOAT16, 0x8000, 0x7fc0},
    {TETHER_FLOAT32, 0x80000000u, 0x7fc00000u},
    {TETHER_FLOAT64, 1ull << 63, 0x7ff8000000000000ull},
};

/* Element i of rank r, in blocks of n + 2: in the first n, rank i % (n + 2) holds -0 and the others
 * +0; then all +0; then a NaN on every rank, each with its own sign and payload. Returns what every
 * rank must end with: +0 (MAX) or -0 (MIN) of the zeros, the canonical NaN of the NaNs. */
static uint64_t zero_input(const zero_dtype *z, int r, int n, size_t i, tether_op op, uint64_t *out)
{
    size_t j = i % (size_t)(n + 2);
    if (j == (size_t)n + 1) {
        *out = (z->nan | (uint64_t)(r + 1)) ^ (r % 2 ? z->neg_zero : 0);
        return z->nan;
    }
    *out = j == (size_t)r ? z->neg_zero : 0;
    return j < (size_t)n && op == TETHER_MIN ? z->neg_zero : 0;
}

/* MAX and MIN of every float dtype, in place and not, checked bit for bit on every rank. */
static void zeros_body(tether_group *g, world *w)
{
    enum { COUNT = 41 };
    uint8_t send[COUNT * 8], recv[COUNT * 8];
    for (size_t k = 0; k < sizeof zero_dtypes / sizeof zero_dtypes[0]; k++)
        for (int op = TETHER_MAX; op <= TETHER_MIN; op++)
            for (int in_place = 0; in_place < 2; in_place++) {
                const zero_dtype *z = &zero_dtypes[k];
                size_t es = tether_dtype_size(z->dt);
                for (size_t i = 0; i < COUNT; i++) {
                    uint64_t v;
                    zero_input(z, g->rank, g->size, i, (tether_op)op, &v);
                    memcpy(send + i * es, &v, es); /* the low bytes: little-endian test host */
                }
                uint8_t *out = in_place ? send : recv;
                if (!check_rc(g, w, tether_all_reduce(g, send, out, COUNT, z->dt, (tether_op)op),
                              "all_reduce of signed zeros and NaNs"))
                    return;
                for (size_t i = 0; i < COUNT; i++) {
                    uint64_t v, got = 0,
                                want = zero_input(z, g->rank, g->size, i, (tether_op)op, &v);
                    memcpy(&got, out + i * es, es);
                    if (got != want) {
                        failf(w, "rank %d: dtype %d op %d%s: element %zu is 0x%llx, want 0x%llx",
                              g->rank, (int)z->dt, op, in_place ? " in place" : "", i,
                              (unsigned long long)got, (unsigned long long)want);
                        return;
                    }
                }
            }
}

/* Every all-reduce algorithm, forced by TETHER_ALLREDUCE_ALGO, with and without bf16 on the wire
 * (float32), N = 2..8: one rank's -0 against the others' +0, and different NaNs on every rank, give
 * every rank the same bits. Partners of the tree used to compute -0 MAX +0 and +0 MAX -0, and keep
 * their own operand. */
static void test_signed_zeros_agree(void **state)
{
    (void)state;
    static const char *const algos[] = {"ring", "direct", "butterfly", "tree", "neighbor"};
    for (int a = 0; a < NALGOS(algos); a++) {
        setenv("TETHER_ALLREDUCE_ALGO", algos[a], 1);
        for (int wire_bf16 = 0; wire_bf16 < 2; wire_bf16++)
            for (int n = 2; n <= 8; n++) {
                world w = {
                    .n = n, .caps = TETHER__CAP_DIRECT, .wire_bf16 = wire_bf16, .body = zeros_body};
                run_world(&w);
            }
    }
    unsetenv("TETHER_ALLREDUCE_ALGO");
}

/* ---- a split group's messages name ranks the user can find ---- */

/* World ranks 1 and 2 split off (world rank 1 is their rank 0); in it world rank 1 waits for a
 * message that never comes. Its timeout names it as rank 0 of the group and as world rank 1. */
static void child_names_body(tether_group *g, world *w)
{
    tether_group *c = NULL;
    if (!check_rc(g, w, tether_group_split(g, g->rank > 0, g->rank, &c), "split"))
        return;
    if (g->rank == 1) {
        char want[64];
        double x;
        int rc = tether_recv(c, &x, 1, TETHER_FLOAT64, 1);
        snprintf(want, sizeof want, "rank 0 of group %08x (world rank 1)", c->id);
        if (rc != TETHER_ETIMEDOUT || !strstr(tether_last_error(), want))
            failf(w, "world rank 1: recv in the child: %s: \"%s\"; want it to name %s",
                  tether_err_name(rc), tether_last_error(), want);
        atomic_store(&w->arrived[0], 1);
    }
    while (!atomic_load(&w->arrived[0])) /* the others stay until it timed out */
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    tether_group_free(c);
}

static void test_child_rank_names(void **state)
{
    (void)state;
    world w = {.n = 3, .call_timeout_ms = 1000, .body = child_names_body};
    run_world(&w);
}

/* ---- the neighbour algorithms talk to neighbours only ---- */

/* After one call: this rank sent n / 2 messages to its right neighbour, (n - 1) / 2 to its left
 * one (the opposite rank's block of an even ring goes one way only) and none to anyone else. */
static void expect_neighbour_sends(tether_group *g, world *w, long *before, const char *what)
{
    int n = g->size, right = (g->rank + 1) % n, left = (g->rank + n - 1) % n;
    for (int q = 0; q < n; q++) {
        long sent = tether__memt_sent(g->world->ep, q) - before[q];
        long want = (q == right ? n / 2 : 0) + (q == left ? (n - 1) / 2 : 0);
        if (sent != want)
            failf(w, "rank %d: %s sent %ld messages to rank %d, want %ld", g->rank, what, sent, q,
                  want);
        before[q] += sent;
    }
}

/* After one broadcast from root: only the buffer travels, down the ring both ways from the root,
 * so this rank (v = rank - root mod n) sent it once to the next rank away from the root, if any:
 * right up to the opposite rank (v < n / 2), left beyond it, the root both ways. No empty blocks:
 * the signature chain, not a round of messages, tells the ranks that disagree. */
static void expect_broadcast_sends(tether_group *g, world *w, long *before, int root)
{
    int n = g->size, right = (g->rank + 1) % n, left = (g->rank + n - 1) % n;
    int v = (g->rank - root + n) % n, half = n / 2;
    int to_right = v < half, to_left = (v == 0 && n - 1 > half) || v > half + 1;
    for (int q = 0; q < n; q++) {
        long sent = tether__memt_sent(g->world->ep, q) - before[q];
        long want = (q == right ? to_right : 0) + (q == left ? to_left : 0);
        if (sent != want)
            failf(w, "rank %d: broadcast from %d sent %ld messages to rank %d, want %ld", g->rank,
                  root, sent, q, want);
        before[q] += sent;
    }
}

/* auto without direct links: small calls take the neighbour algorithms, whose messages are
 * counted */
static void neighbour_sends_body(tether_group *g, world *w)
{
    long before[8] = {0};
    int n = g->size;
    all_reduce(g, w, TETHER_FLOAT32, TETHER_SUM, 100, 0);
    expect_neighbour_sends(g, w, before, "all_reduce");
    all_gather(g, w, TETHER_INT16, 100);
    expect_neighbour_sends(g, w, before, "all_gather");
    for (int root = 0; root < n; root++) {
        broadcast(g, w, TETHER_INT32, 100, root);
        expect_broadcast_sends(g, w, before, root);
    }
    if (check_rc(g, w, tether_barrier(g), "barrier"))
        expect_neighbour_sends(g, w, before, "barrier");
}

static void test_neighbor_sends(void **state)
{
    (void)state;
    unsetenv("TETHER_ALLREDUCE_ALGO");
    for (int n = 3; n <= 8; n++) {
        world w = {.n = n, .body = neighbour_sends_body};
        run_world(&w);
    }
}

/* The butterfly of 4 ranks: both partners of every rank are ring neighbours (Gray-code places),
 * two messages to each (one halving, one doubling), none to the rank opposite, whose messages a
 * ring would have to forward. */
static void butterfly_sends_body(tether_group *g, world *w)
{
    long before[4] = {0};
    int n = g->size, right = (g->rank + 1) % n, left = (g->rank + n - 1) % n;
    all_reduce(g, w, TETHER_FLOAT32, TETHER_SUM, 1 << 16, 1);
    for (int q = 0; q < n; q++) {
        long sent = tether__memt_sent(g->world->ep, q) - before[q];
        long want = q == right || q == left ? 2 : 0;
        if (sent != want)
            failf(w, "rank %d: butterfly sent %ld messages to rank %d, want %ld", g->rank, sent, q,
                  want);
    }
}

static void test_butterfly_sends(void **state)
{
    (void)state;
    setenv("TETHER_ALLREDUCE_ALGO", "butterfly", 1);
    world w = {.n = 4, .body = butterfly_sends_body};
    run_world(&w);
    unsetenv("TETHER_ALLREDUCE_ALGO");
}

/* A group whose calls reach 2^30 (a serving loop of small all-reduces for a few hours): its next
 * calls are numbered from 0 again, and none is tagged with the bits that mark control traffic
 * (TETHER__TAG_CTRL) or point-to-point messages (TETHER__TAG_P2P). */
static void seq_wrap_body(tether_group *g, world *w)
{
    g->seq = TETHER__TAG_SEQ_MASK - 2;
    for (int call = 0; call < 3; call++) {
        all_reduce(g, w, TETHER_FLOAT32, TETHER_SUM, 100, 0);
        broadcast(g, w, TETHER_INT32, 100, call % g->size);
    }
    all_gather(g, w, TETHER_INT16, 10);
    uint32_t bits = tether__memt_seq_bits(g->world->ep);
    if (bits & ~TETHER__TAG_SEQ_MASK)
        failf(w, "rank %d: collective messages tagged with seq bits %08x", g->rank, bits);
    if (g->seq != 4)
        failf(w, "rank %d: the group's next call is %u, want 4 (numbered past the wrap)", g->rank,
              g->seq);
}

static void test_seq_wrap(void **state)
{
    (void)state;
    world w = {.n = 3, .body = seq_wrap_body};
    run_world(&w);
}

/* ---- failures: an injected dead rank, mismatched calls ---- */

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Rank 1 "dies" at its second send (every algorithm sends at least twice at N=4). A rank whose
 * remaining steps do not involve rank 1 may still finish that call (its data was complete), but
 * every rank must fail within a call or two, fast, and then keep returning its error. */
static void fault_body(tether_group *g, world *w)
{
    if (g->rank == 1)
        tether__memt_fail_sends_after(g->world->ep, 1);
    float *x = calloc(1 << 18, sizeof *x);
    long t0 = now_ms();
    int rc = TETHER_OK;
    for (int call = 0; call < 3 && rc == TETHER_OK; call++)
        rc = tether_all_reduce(g, x, x, 1 << 18, TETHER_FLOAT32, TETHER_SUM);
    w->codes[g->rank] = rc;
    w->elapsed_ms[g->rank] = now_ms() - t0;
    if (tether_all_reduce(g, x, x, 1, TETHER_FLOAT32, TETHER_SUM) != rc)
        failf(w, "rank %d: the call after a failure did not return the same error", g->rank);
    free(x);
}

static void check_fault_world(world *w, int dead)
{
    for (int r = 0; r < w->n; r++) {
        int want = r == dead ? TETHER_ENET : TETHER_EPEER;
        if (w->codes[r] != want)
            fail_msg("N=%d rank %d got %s, want %s", w->n, r, tether_err_name(w->codes[r]),
                     tether_err_name(want));
        if (w->elapsed_ms[r] > 2000)
            fail_msg("N=%d rank %d took %ld ms to fail", w->n, r, w->elapsed_ms[r]);
    }
}

static void test_fault_injection(void **state)
{
    (void)state;
    static const char *const algos[] = {"ring", "direct", "butterfly", "tree", "neighbor"};
    for (int a = 0; a < NALGOS(algos); a++) {
        setenv("TETHER_ALLREDUCE_ALGO", algos[a], 1);
        world w = {.n = 4, .caps = TETHER__CAP_DIRECT, .body = fault_body};
        run_world(&w);
        check_fault_world(&w, 1);
    }
    unsetenv("TETHER_ALLREDUCE_ALGO");
}

/* Rank 0 passes another count (0, or one more): every rank errs out quickly, none hangs. */
static void mismatch_body(tether_group *g, world *w)
{
    float x[8] = {0};
    size_t count = g->rank == 0 ? w->rank0_count : 5;
    long t0 = now_ms();
    w->codes[g->rank] = tether_all_reduce(g, x, x, count, TETHER_FLOAT32, TETHER_SUM);
    w->elapsed_ms[g->rank] = now_ms() - t0;
}

static void test_mismatch(void **state)
{
    (void)state;
    static const char *const algos[] = {"ring", "direct", "butterfly", "tree", "neighbor"};
    for (int a = 0; a < NALGOS(algos); a++)
        for (int zero = 0; zero < 2; zero++) {
            setenv("TETHER_ALLREDUCE_ALGO", algos[a], 1);
            world w = {.n = 3,
                       .caps = TETHER__CAP_DIRECT,
                       .body = mismatch_body,
                       .rank0_count = zero ? 0 : 6};
            run_world(&w);
            int mismatches = 0;
            for (int r = 0; r < w.n; r++) {
                if (w.codes[r] == TETHER_OK || w.codes[r] == TETHER_ETIMEDOUT ||
                    w.elapsed_ms[r] > 2000)
                    fail_msg("%s, rank 0 count %d: rank %d got %s after %ld ms", algos[a],
                             zero ? 0 : 6, r, tether_err_name(w.codes[r]), w.elapsed_ms[r]);
                mismatches += w.codes[r] == TETHER_EMISMATCH;
            }
            assert_true(mismatches >= 1);
        }
    unsetenv("TETHER_ALLREDUCE_ALGO");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_butterfly),
        cmocka_unit_test(test_direct),
        cmocka_unit_test(test_auto),
        cmocka_unit_test(test_neighbor),
        cmocka_unit_test(test_auto_neighbours),
        cmocka_unit_test(test_neighbor_bits),
        cmocka_unit_test(test_signed_zeros_agree),
        cmocka_unit_test(test_child_rank_names),
        cmocka_unit_test(test_neighbor_sends),
        cmocka_unit_test(test_butterfly_sends),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_bf16_wire),
        cmocka_unit_test(test_seq_wrap),
        cmocka_unit_test(test_fault_injection),
        cmocka_unit_test(test_mismatch),
    };
    const char *only = getenv("TETHER_TEST_FILTER"); /* e.g. "test_ring" while debugging */
    if (only)
        cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
