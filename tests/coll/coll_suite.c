/* tests/coll/coll_suite.c - every collective, dtype and op across real ranks, checked against a
 * reference each rank computes alone. Run under `tether launch -n N`; exits non-zero on the first
 * wrong element. Usage: coll_suite [--large] [--split] [--p2p] [--routed] [--quick]
 * [--any-rate]
 * default: all_reduce (every
 * dtype x op, in and out of place), all_gather, reduce_scatter, broadcast from every root,
 * all_to_all, barrier, at counts 0, 1, 7, size+1, 3*size-1, 1000.
 *   --large: the same collectives at >= 16 MiB (float32). --split: two levels of split and
 * concurrent threads on sibling groups, then groups of listed ranks (tether_group_create). --p2p:
 * send/recv between every ordered pair, then tagged, non-blocking requests: receives posted before
 * sends, tags received out of order, waitsome, then receives from TETHER_ANY_SOURCE (run_any), then
 * tether_cancel (run_cancel).
 * --routed: large messages between distant ranks, all at once (run_routed). --any-rate: 1,000 small
 * messages to rank 0 from the other ranks, each taken by an any-source receive, timed
 * (run_any_rate). */
#include <complex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "tether.h"

static int world_rank;

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != TETHER_OK) {                                                                    \
            fprintf(stderr, "rank %d: %s:%d: %s -> %s: %s\n", world_rank, __FILE__, __LINE__,      \
                    #call, tether_err_name(rc_), tether_last_error());                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static const char *const dt_names[] = {"bool",     "int8",    "uint8",   "int16",    "uint16",
                                       "int32",    "uint32",  "int64",   "uint64",   "float16",
                                       "bfloat16", "float32", "float64", "complex64"};
static const char *const op_names[] = {"sum", "prod", "max", "min"};

/* Rank r's input at element i: small integers so every reduction is exact in every dtype.
 * PROD inputs are 1 except a 2 where i % size == r, so products stay tiny. */
static double input(int r, size_t i, int size, tether_op op, tether_dtype dt)
{
    if (dt == TETHER_BOOL)
        return (double)(((size_t)r + i) % 3 == 0);
    if (op == TETHER_PROD)
        return (i % (size_t)size == (size_t)r) ? 2.0 : 1.0;
    return (double)(((size_t)r * 7 + i * 3) % 5) +
           (dt == TETHER_INT8 || dt == TETHER_INT16 || dt == TETHER_INT32 || dt == TETHER_INT64 ||
                    dt == TETHER_FLOAT32
                ? -2.0
                : 0.0);
}

/* The reduction of every rank's input at i, computed alone. */
static double complex expected(int size, size_t i, tether_op op, tether_dtype dt)
{
    double complex acc = 0;
    for (int r = 0; r < size; r++) {
        double v = input(r, i, size, op, dt);
        double complex z = dt == TETHER_COMPLEX64 ? v + 1.0 * I : v;
        if (r == 0)
            acc = z;
        else if (dt == TETHER_BOOL)
            acc = (op == TETHER_SUM || op == TETHER_MAX) ? (creal(acc) != 0 || v != 0)
                                                         : (creal(acc) != 0 && v != 0);
        else if (op == TETHER_SUM)
            acc += z;
        else if (op == TETHER_PROD)
            acc *= z;
        else if (op == TETHER_MAX)
            acc = creal(acc) > v ? acc : v;
        else
            acc = creal(acc) < v ? acc : v;
    }
    return acc;
}

static void expect_at(const char *what, tether_dtype dt, const void *buf, size_t i,
                      double complex want)
{
    double im, re = bench_load(dt, buf, i, &im);
    double want_re = creal(want), want_im = cimag(want);
    if (dt == TETHER_COMPLEX64 ? (re != (float)want_re || im != (float)want_im) : re != want_re) {
        fprintf(stderr, "rank %d: %s %s: element %zu is %g%+gi, expected %g%+gi\n", world_rank,
                what, dt_names[dt], i, re, im, want_re, want_im);
        exit(1);
    }
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", world_rank, n);
        exit(1);
    }
    return p;
}

static void check_all_reduce(tether_group *g, tether_dtype dt, tether_op op, size_t count,
                             int in_place)
{
    int rank = tether_group_rank(g), size = tether_group_size(g);
    size_t es = tether_dtype_size(dt);
    char *send = xmalloc(count * es), *recv = in_place ? send : xmalloc(count * es);
    for (size_t i = 0; i < count; i++)
        bench_store(dt, send, i, input(rank, i, size, op, dt));
    CHECK(tether_all_reduce(g, send, recv, count, dt, op));
    char what[64];
    snprintf(what, sizeof what, "all_reduce %s %s", op_names[op], in_place ? "in place" : "");
    for (size_t i = 0; i < count; i++)
        expect_at(what, dt, recv, i, expected(size, i, op, dt));
    if (!in_place)
        free(recv);
    free(send);
}

static void check_reduce_scatter(tether_group *g, tether_dtype dt, tether_op op, size_t count)
{
    int rank = tether_group_rank(g), size = tether_group_size(g);
    size_t es = tether_dtype_size(dt), total = count * (size_t)size;
    char *send = xmalloc(total * es), *recv = xmalloc(count * es);
    for (size_t i = 0; i < total; i++)
        bench_store(dt, send, i, input(rank, i, size, op, dt));
    CHECK(tether_reduce_scatter(g, send, recv, count, dt, op));
    for (size_t i = 0; i < count; i++)
        expect_at("reduce_scatter", dt, recv, i, expected(size, (size_t)rank * count + i, op, dt));
    free(send);
    free(recv);
}

/* Value rank r contributes at i for data-movement collectives (no reduction). */
static double tagv(int r, size_t i)
{
    return (double)((r * 31 + (int)(i % 97)) % 120);
}

static void check_moves(tether_group *g, tether_dtype dt, size_t count)
{
    int rank = tether_group_rank(g), size = tether_group_size(g);
    size_t es = tether_dtype_size(dt), total = count * (size_t)size;
    char *a = xmalloc(total * es), *b = xmalloc(total * es);
    if (dt == TETHER_BOOL || dt == TETHER_COMPLEX64)
        return free(a), free(b);
    /* all_gather */
    for (size_t i = 0; i < count; i++)
        bench_store(dt, a, i, tagv(rank, i));
    CHECK(tether_all_gather(g, a, b, count, dt));
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < count; i++)
            expect_at("all_gather", dt, b, (size_t)r * count + i, tagv(r, i));
    /* broadcast from every root */
    for (int root = 0; root < size; root++) {
        for (size_t i = 0; i < count; i++)
            bench_store(dt, a, i, rank == root ? tagv(root, i) : 0);
        CHECK(tether_broadcast(g, a, count, dt, root));
        for (size_t i = 0; i < count; i++)
            expect_at("broadcast", dt, a, i, tagv(root, i));
    }
    /* all_to_all: block j of rank r holds tagv(r * size + j, i) */
    for (int j = 0; j < size; j++)
        for (size_t i = 0; i < count; i++)
            bench_store(dt, a, (size_t)j * count + i, tagv(rank * size + j, i));
    CHECK(tether_all_to_all(g, a, b, count, dt));
    for (int r = 0; r < size; r++)
        for (size_t i = 0; i < count; i++)
            expect_at("all_to_all", dt, b, (size_t)r * count + i, tagv(r * size + rank, i));
    CHECK(tether_barrier(g));
    free(a);
    free(b);
}

static void run_matrix(tether_group *g, int quick)
{
    int size = tether_group_size(g);
    size_t counts[] = {0, 1, 7, (size_t)size + 1, 3 * (size_t)size - 1, 1000};
    int ncounts = quick ? 3 : (int)(sizeof counts / sizeof counts[0]);
    for (int dt = 0; dt < TETHER_DTYPE_COUNT; dt++)
        for (int ci = 0; ci < ncounts; ci++) {
            for (int op = 0; op < TETHER_OP_COUNT; op++) {
                if (dt == TETHER_COMPLEX64 && (op == TETHER_MAX || op == TETHER_MIN))
                    continue;
                check_all_reduce(g, dt, op, counts[ci], 0);
                check_all_reduce(g, dt, op, counts[ci], 1);
                check_reduce_scatter(g, dt, op, counts[ci]);
            }
            check_moves(g, dt, counts[ci]);
        }
}

static void run_large(tether_group *g)
{
    size_t count = (16u << 20) / 4 + 13; /* >= 16 MiB of float32, not divisible by size */
    check_all_reduce(g, TETHER_FLOAT32, TETHER_SUM, count, 1);
    check_all_reduce(g, TETHER_FLOAT32, TETHER_MAX, count, 0);
    check_reduce_scatter(g, TETHER_FLOAT32, TETHER_SUM, count / (size_t)tether_group_size(g));
    check_moves(g, TETHER_FLOAT32, count / (size_t)tether_group_size(g));
}

static void run_p2p(tether_group *g)
{
    int rank = tether_group_rank(g), size = tether_group_size(g);
    int32_t buf[257];
    /* every ordered pair (s, d), one pair at a time so blocking sends cannot deadlock */
    for (int s = 0; s < size; s++)
        for (int d = 0; d < size; d++) {
            if (s == d)
                continue;
            size_t n = 1 + (size_t)(s * size + d) % 257;
            if (rank == s) {
                for (size_t i = 0; i < n; i++)
                    buf[i] = s * 1000 + d * 10 + (int32_t)i;
                CHECK(tether_send(g, buf, n, TETHER_INT32, d));
            } else if (rank == d) {
                memset(buf, 0, sizeof buf);
                CHECK(tether_recv(g, buf, n, TETHER_INT32, s));
                for (size_t i = 0; i < n; i++)
                    if (buf[i] != s * 1000 + d * 10 + (int32_t)i) {
                        fprintf(stderr, "rank %d: recv from %d: element %zu is %d\n", rank, s, i,
                                buf[i]);
                        exit(1);
                    }
            }
        }
    CHECK(tether_barrier(g));
}

/* Every rank sends a large message dist ranks on and receives one from dist ranks back, all at
 * once, checked element by element. */
static void routed_shift(tether_group *g, int dist, size_t count)
{
    int rank = tether_group_rank(g), size = tether_group_size(g);
    int to = (rank + dist) % size, from = (rank + size - dist) % size;
    int32_t *out = malloc(count * sizeof *out), *in = calloc(count, sizeof *in);
    tether_request *req[2];
    if (!out || !in) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        exit(1);
    }
    for (size_t i = 0; i < count; i++)
        out[i] = rank * 1000003 + to * 101 + (int32_t)(i % 9973);
    CHECK(tether_irecv(g, in, count, TETHER_INT32, from, 0, &req[0]));
    CHECK(tether_isend(g, out, count, TETHER_INT32, to, 0, &req[1]));
    CHECK(tether_wait(req[0]));
    CHECK(tether_wait(req[1]));
    for (size_t i = 0; i < count; i++)
        if (in[i] != from * 1000003 + rank * 101 + (int32_t)(i % 9973)) {
            fprintf(stderr, "rank %d: routed message from %d: element %zu is %d\n", rank, from, i,
                    in[i]);
            exit(1);
        }
    free(out);
    free(in);
}

/* Routed traffic in both directions through the same ranks: every rank to the rank opposite
 * (N = 4: 0 <-> 2 and 1 <-> 3 cross at every rank on the way), then to the rank two on, where
 * every rank passes traffic the same way round while sending its own (N >= 5: the cycle of
 * back-pressure that forwarding must break). */
static void run_routed(tether_group *g)
{
    size_t count = (8u << 20) / 4 + 13; /* 8 MiB of int32, not a whole number of frames */
    routed_shift(g, tether_group_size(g) / 2, count);
    routed_shift(g, 2, count);
    CHECK(tether_barrier(g));
}

/* Element i of the message from s to d with tag t. */
static int32_t tagged_value(int s, int d, int t, size_t i)
{
    return (int32_t)(s * 100000 + d * 1000 + t * 10) + (int32_t)(i % 7);
}

static void expect_tagged(const int32_t *buf, size_t n, int s, int d, int t)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i] != tagged_value(s, d, t, i)) {
            fprintf(stderr, "rank %d: tag %d from %d: element %zu is %d\n", d, t, s, i, buf[i]);
            exit(1);
        }
}

/* Tagged, non-blocking point to point between rank 0 and every other rank, with messages larger
 * than any socket buffer (each waits for its receive): both sides post their receives first; the
 * peer receives tag 2 before tag 1 though 1 was sent first; tag 3 carries two messages that must
 * arrive in order; waitsome completes them all. */
/* The mpi backend offers neither non-blocking point to point nor groups of a rank list (yet): both
 * must say so, TETHER_EUNAVAIL, and leave nothing behind. Returns whether g is such a group. */
static int lacks_requests_and_lists(tether_group *g)
{
    if (strcmp(tether_group_backend(g), "mpi") != 0)
        return 0;
    int rank = tether_group_rank(g), peer = (rank + 1) % tether_group_size(g), x = 0;
    tether_request *req = NULL;
    tether_group *c = NULL;
    if (tether_isend(g, &x, 1, TETHER_INT32, peer, 0, &req) != TETHER_EUNAVAIL || req ||
        tether_group_create(g, &rank, 1, &c) != TETHER_EUNAVAIL || c) {
        fprintf(stderr, "rank %d: mpi: tether_isend or tether_group_create did not refuse\n", rank);
        exit(1);
    }
    return 1;
}

static void run_tagged(tether_group *g)
{
    int rank = tether_group_rank(g), size = tether_group_size(g);
    if (lacks_requests_and_lists(g))
        return;
    const size_t n = (size_t)1 << 20; /* 4 MiB of int32 */
    enum { NBUF = 5 };
    int32_t *in[NBUF], *out[NBUF];
    for (int i = 0; i < NBUF; i++) {
        in[i] = malloc(n * sizeof(int32_t));
        out[i] = malloc(n * sizeof(int32_t));
        if (!in[i] || !out[i])
            exit(2);
    }
    tether_request *bad = NULL;
    if (tether_isend(g, in[0], 1, TETHER_INT32, (rank + 1) % size, -1, &bad) != TETHER_EINVAL ||
        bad) {
        fprintf(stderr, "rank %d: a negative tag was accepted\n", rank);
        exit(1);
    }
    for (int peer = 1; peer < size; peer++) {
        if (rank != 0 && rank != peer)
            continue;
        int other = rank == 0 ? peer : 0;
        /* Each side: the receive of the other's tag 0 first, then its own tag 0 send. */
        tether_request *reqs[2];
        for (size_t i = 0; i < n; i++)
            out[0][i] = tagged_value(rank, other, 0, i);
        CHECK(tether_irecv(g, in[0], n, TETHER_INT32, other, 0, &reqs[0]));
        CHECK(tether_isend(g, out[0], n, TETHER_INT32, other, 0, &reqs[1]));
        int left = 2;
        while (left) {
            int done = 0;
            CHECK(tether_waitsome(reqs, 2, 1000, &done));
            left -= done;
        }
        expect_tagged(in[0], n, other, rank, 0);
        /* Rank 0 sends tags 1, 2, 3, 3; the peer takes 2, then 1, then the two of tag 3. */
        if (rank == 0) {
            int tags[4] = {1, 2, 3, 3};
            tether_request *sends[4];
            for (int k = 0; k < 4; k++) {
                for (size_t i = 0; i < n; i++)
                    out[k + 1][i] = tagged_value(0, peer, tags[k] * 10 + k, i);
                CHECK(tether_isend(g, out[k + 1], n, TETHER_INT32, peer, tags[k], &sends[k]));
            }
            for (int k = 0; k < 4; k++)
                CHECK(tether_wait(sends[k]));
        } else {
            tether_request *r2, *r1, *r3a, *r3b;
            CHECK(tether_irecv(g, in[2], n, TETHER_INT32, 0, 2, &r2));
            CHECK(tether_wait(r2)); /* completes although tag 1 was sent before it */
            CHECK(tether_irecv(g, in[1], n, TETHER_INT32, 0, 1, &r1));
            CHECK(tether_irecv(g, in[3], n, TETHER_INT32, 0, 3, &r3a));
            CHECK(tether_irecv(g, in[4], n, TETHER_INT32, 0, 3, &r3b));
            int done = 0;
            while (!done)
                CHECK(tether_test(r1, &done));
            CHECK(tether_wait(r3b));
            CHECK(tether_wait(r3a));
            expect_tagged(in[1], n, 0, rank, 10 + 0);
            expect_tagged(in[2], n, 0, rank, 20 + 1);
            expect_tagged(in[3], n, 0, rank, 30 + 2);
            expect_tagged(in[4], n, 0, rank, 30 + 3);
        }
    }
    for (int i = 0; i < NBUF; i++) {
        free(in[i]);
        free(out[i]);
    }
    CHECK(tether_barrier(g));
}

/* Element i of message k from sender s to rank 0 in the any-source checks: s and k readable from
 * element 0. */
static int32_t any_value(int s, int k, size_t i)
{
    return (int32_t)(s * 1000 + k) + (int32_t)(i % 11) * 1000000;
}

/* The sender and number of an any-source message, checked whole; exits when it is not one. */
static void any_decode(const int32_t *buf, size_t n, int *s, int *k)
{
    *s = buf[0] / 1000;
    *k = buf[0] % 1000;
    for (size_t i = 0; i < n; i++)
        if (buf[i] != any_value(*s, *k, i)) {
            fprintf(stderr, "rank 0: any-source message %d from %d: element %zu is %d\n", *k, *s, i,
                    buf[i]);
            exit(1);
        }
}

static void any_expect(int cond, const char *what, int a, int b)
{
    if (!cond) {
        fprintf(stderr, "rank %d: any source: %s (%d, %d)\n", world_rank, what, a, b);
        exit(1);
    }
}

/* Receives from TETHER_ANY_SOURCE, rank 0 receiving from every other rank. Blocking (every
 * backend): K messages of tag 0 from each sender, the first of the last rank's taken by a directed
 * receive; each carries its sender, which must be the source reported, and each sender's come in
 * the order sent. Non-blocking: all K messages of tag 7 from every sender (1 MiB each, more than a
 * socket buffer) claimed by that many any-source receives in flight at once, each exactly once,
 * while every sender's earlier message of tag 8 waits for its own any-source receive. */
static void run_any(tether_group *g)
{
    enum { K = 4 };
    int rank = tether_group_rank(g), size = tether_group_size(g), x = 0, src = -1;
    tether_group *alone = NULL;
    CHECK(tether_group_split(g, rank, 0, &alone));
    any_expect(tether_recv_from(alone, &x, 1, TETHER_INT32, TETHER_ANY_SOURCE, &src) ==
                   TETHER_EINVAL,
               "a group of size 1 accepted TETHER_ANY_SOURCE", tether_group_size(alone), src);
    tether_group_free(alone);
    any_expect(tether_send(g, &x, 1, TETHER_INT32, TETHER_ANY_SOURCE) == TETHER_EINVAL,
               "tether_send accepted TETHER_ANY_SOURCE as dst", rank, 0);
    const size_t n = 100, big = (size_t)1 << 18;
    int32_t *buf = malloc(big * sizeof(int32_t) * (size_t)K * (size_t)size);
    if (!buf)
        exit(2);
    if (rank != 0) {
        for (int k = 0; k < K; k++) {
            for (size_t i = 0; i < n; i++)
                buf[i] = any_value(rank, k, i);
            CHECK(tether_send(g, buf, n, TETHER_INT32, 0));
        }
    } else {
        int next[64] = {0};
        CHECK(tether_recv_from(g, buf, n, TETHER_INT32, size - 1, &src));
        int s, k;
        any_decode(buf, n, &s, &k);
        any_expect(src == size - 1 && s == src && k == 0, "directed receive got", s, k);
        next[s] = 1;
        for (int j = 1; j < (size - 1) * K; j++) {
            src = -1;
            CHECK(tether_recv_from(g, buf, n, TETHER_INT32, TETHER_ANY_SOURCE, &src));
            any_decode(buf, n, &s, &k);
            any_expect(s == src, "message from the other rank than the source reported", s, src);
            any_expect(k == next[s], "a sender's messages out of order", k, next[s]);
            next[s]++;
        }
    }
    CHECK(tether_barrier(g));
    if (lacks_requests_and_lists(g)) {
        free(buf);
        return;
    }
    if (rank != 0) {
        tether_request *reqs[K + 1];
        int32_t first = any_value(rank, 99, 0);
        CHECK(tether_isend(g, &first, 1, TETHER_INT32, 0, 8, &reqs[K]));
        for (int k = 0; k < K; k++) {
            int32_t *b = buf + (size_t)k * big;
            for (size_t i = 0; i < big; i++)
                b[i] = any_value(rank, k, i);
            CHECK(tether_isend(g, b, big, TETHER_INT32, 0, 7, &reqs[k]));
        }
        for (int k = 0; k <= K; k++)
            CHECK(tether_wait(reqs[k]));
    } else {
        int m = (size - 1) * K, left = m, seen[64][K], from[64 * K];
        tether_request *reqs[64 * K];
        memset(seen, 0, sizeof seen);
        for (int j = 0; j < m; j++)
            CHECK(tether_irecv_from(g, buf + (size_t)j * big, big, TETHER_INT32, TETHER_ANY_SOURCE,
                                    7, &from[j], &reqs[j]));
        while (left) {
            int done = 0;
            CHECK(tether_waitsome(reqs, m, 1000, &done));
            left -= done;
        }
        for (int j = 0; j < m; j++) {
            int s, k;
            any_decode(buf + (size_t)j * big, big, &s, &k);
            any_expect(s == from[j] && !seen[s][k], "claimed twice or from another rank", s, k);
            seen[s][k] = 1;
        }
        for (int j = 1; j < size; j++) {
            int32_t v = 0;
            tether_request *r;
            CHECK(tether_irecv_from(g, &v, 1, TETHER_INT32, TETHER_ANY_SOURCE, 8, &src, &r));
            CHECK(tether_wait(r));
            any_expect(v == any_value(src, 99, 0), "tag 8 message", v, src);
        }
    }
    free(buf);
    CHECK(tether_barrier(g));
}

/* Cancel one request and say whether it went, checked against want (-1: either). */
static int cancel_one(tether_request *r, int want, const char *what)
{
    int cancelled = -1;
    CHECK(tether_cancel(r, &cancelled));
    any_expect(want < 0 || cancelled == want, what, cancelled, want);
    return cancelled;
}

/* tether_cancel between ranks 0 and 1 (the others only meet them in the barriers): a receive that
 * met no message is withdrawn and its message goes to the next receive of its sender and tag; an
 * any-source receive without a message is withdrawn; a receive with a later one of the same
 * sender and tag in flight, and a send, are not, and complete as usual; a receive whose message
 * may have come is one or the other, and its message arrives either way. */
static void run_cancel(tether_group *g)
{
    int rank = tether_group_rank(g), size = tether_group_size(g), v[4] = {0}, src = -1;
    tether_request *r[2];
    if (lacks_requests_and_lists(g))
        return;
    if (rank == 0) {
        CHECK(tether_irecv(g, &v[0], 1, TETHER_INT32, 1, 5, &r[0]));
        cancel_one(r[0], 1, "a receive that met no message was not withdrawn");
        if (size > 2) { /* rank 2: on a ring of 4 or more, reached through others */
            CHECK(tether_irecv(g, &v[0], 1, TETHER_INT32, 2, 5, &r[0]));
            cancel_one(r[0], 1, "a receive from rank 2 that met no message was not withdrawn");
        }
        CHECK(tether_irecv_from(g, &v[0], 1, TETHER_INT32, TETHER_ANY_SOURCE, 6, &src, &r[0]));
        cancel_one(r[0], 1, "an any-source receive without a message was not withdrawn");
        CHECK(tether_irecv(g, &v[0], 1, TETHER_INT32, 1, 7, &r[0]));
        CHECK(tether_irecv(g, &v[1], 1, TETHER_INT32, 1, 7, &r[1]));
        cancel_one(r[0], 0, "a receive with a later one of its tag in flight was withdrawn");
    }
    CHECK(tether_barrier(g));
    if (rank == 1) {
        static const int32_t m[4][2] = {{55, 5}, {71, 7}, {72, 7}, {88, 8}}; /* value, tag */
        for (int k = 0; k < 4; k++) {
            CHECK(tether_isend(g, &m[k][0], 1, TETHER_INT32, 0, m[k][1], &r[0]));
            if (k == 0)
                cancel_one(r[0], 0, "a send was withdrawn");
            CHECK(tether_wait(r[0]));
        }
    } else if (rank == 2) {
        static const int32_t m = 56;
        CHECK(tether_isend(g, &m, 1, TETHER_INT32, 0, 5, &r[0]));
        CHECK(tether_wait(r[0]));
    } else if (rank == 0) {
        if (size > 2) {
            tether_request *r2;
            CHECK(tether_irecv(g, &v[2], 1, TETHER_INT32, 2, 5, &r2));
            CHECK(tether_wait(r2));
            any_expect(v[2] == 56, "the message of rank 2's cancelled receive", v[2], 56);
        }
        CHECK(tether_wait(r[0]));
        CHECK(tether_wait(r[1]));
        any_expect(v[0] == 71 && v[1] == 72, "tag 7 messages out of order", v[0], v[1]);
        CHECK(tether_irecv(g, &v[2], 1, TETHER_INT32, 1, 5, &r[0]));
        CHECK(tether_wait(r[0]));
        any_expect(v[2] == 55, "the cancelled receive's message went astray", v[2], 55);
        CHECK(tether_irecv(g, &v[3], 1, TETHER_INT32, 1, 8, &r[0]));
        if (cancel_one(r[0], -1, "")) /* its message may have come: withdrawn or not */
            CHECK(tether_irecv(g, &v[3], 1, TETHER_INT32, 1, 8, &r[0]));
        CHECK(tether_wait(r[0]));
        any_expect(v[3] == 88, "tag 8 message", v[3], 88);
    }
    CHECK(tether_barrier(g));
}

/* 1,000 small messages to rank 0, shared among the other ranks, each taken by a blocking
 * any-source receive and answered, and each sender waits for the answer before it sends again: so
 * rank 0 waits for every message, and the receive must wake as soon as it arrives, not at the end
 * of a sleep slice (10 ms each: 10 s). Rank 0 prints the time; above ANY_RATE_LIMIT_S (generous,
 * for a busy machine) it fails. */
#define ANY_RATE_MESSAGES 1000
#define ANY_RATE_LIMIT_S 5.0
static void run_any_rate(tether_group *g)
{
    int rank = tether_group_rank(g), size = tether_group_size(g);
    CHECK(tether_barrier(g));
    if (rank != 0) {
        for (int k = rank - 1; k < ANY_RATE_MESSAGES; k += size - 1) {
            int32_t v = k, ack = -1;
            CHECK(tether_send(g, &v, 1, TETHER_INT32, 0));
            CHECK(tether_recv(g, &ack, 1, TETHER_INT32, 0));
            any_expect(ack == k, "rank 0 answered another message", ack, k);
        }
    } else {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int k = 0; k < ANY_RATE_MESSAGES; k++) {
            int32_t v = -1;
            int src = -1;
            CHECK(tether_recv_from(g, &v, 1, TETHER_INT32, TETHER_ANY_SOURCE, &src));
            any_expect(src > 0 && src < size && v % (size - 1) == src - 1,
                       "a message from another rank than the source reported", v, src);
            CHECK(tether_send(g, &v, 1, TETHER_INT32, src));
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        printf("any-source rate: %d messages from %d ranks in %.3f s\n", ANY_RATE_MESSAGES,
               size - 1, s);
        any_expect(s <= ANY_RATE_LIMIT_S, "any-source receives too slow (ms per message, limit s)",
                   (int)(s * 1000 / ANY_RATE_MESSAGES), (int)ANY_RATE_LIMIT_S);
    }
    CHECK(tether_barrier(g));
}

typedef struct {
    tether_group *g;
    int iters;
} thread_arg;

static void *hammer(void *p)
{
    thread_arg *a = p;
    for (int i = 0; i < a->iters; i++) {
        check_all_reduce(a->g, TETHER_INT32, TETHER_SUM, 1000 + (size_t)i, 0);
        check_moves(a->g, TETHER_FLOAT32, 33);
    }
    return NULL;
}

/* tether_group_create: the ends of the world in reverse order, twice (the same list: two groups,
 * used in the opposite order), and the odd ranks, formed in between by other ranks; argument
 * errors. Only listed ranks call it. */
static void run_create(tether_group *g)
{
    int rank = tether_group_rank(g), size = tether_group_size(g);
    if (lacks_requests_and_lists(g))
        return;
    int ends[2] = {size - 1, 0}, odd[16], nodd = 0, dup[2] = {rank, rank};
    for (int r = 1; r < size && nodd < 16; r += 2)
        odd[nodd++] = r;
    tether_group *bad = NULL;
    int other = (rank + 1) % size;
    if (tether_group_create(g, &other, 1, &bad) != TETHER_EINVAL ||
        tether_group_create(g, dup, 2, &bad) != TETHER_EINVAL || bad) {
        fprintf(stderr, "rank %d: tether_group_create accepted a bad list\n", rank);
        exit(1);
    }
    tether_group *e1 = NULL, *e2 = NULL, *o = NULL;
    int in_ends = rank == 0 || rank == size - 1, in_odd = rank % 2 == 1;
    if (in_ends)
        CHECK(tether_group_create(g, ends, 2, &e1));
    if (in_odd)
        CHECK(tether_group_create(g, odd, nodd, &o));
    if (in_ends)
        CHECK(tether_group_create(g, ends, 2, &e2));
    if (in_ends) {
        int want = rank == size - 1 ? 0 : 1;
        if (tether_group_rank(e1) != want || tether_group_rank(e2) != want ||
            tether_group_size(e1) != 2) {
            fprintf(stderr, "rank %d: created group gave rank %d of %d\n", rank,
                    tether_group_rank(e1), tether_group_size(e1));
            exit(1);
        }
        /* Rank 0 uses e2 first, the last rank e1 first: only distinct groups can pass this. */
        tether_group *first = rank == 0 ? e2 : e1, *second = rank == 0 ? e1 : e2;
        int32_t x = rank + 1, y = rank + 2;
        tether_request *rx, *ry;
        CHECK(tether_irecv(first, &x, 1, TETHER_INT32, 1 - tether_group_rank(first), 0, &rx));
        CHECK(tether_irecv(second, &y, 1, TETHER_INT32, 1 - tether_group_rank(second), 0, &ry));
        int32_t mine1 = first == e1 ? 100 + rank : 200 + rank,
                mine2 = second == e1 ? 100 + rank : 200 + rank;
        CHECK(tether_send(second, &mine2, 1, TETHER_INT32, 1 - tether_group_rank(second)));
        CHECK(tether_send(first, &mine1, 1, TETHER_INT32, 1 - tether_group_rank(first)));
        CHECK(tether_wait(rx));
        CHECK(tether_wait(ry));
        int peer = rank == 0 ? size - 1 : 0;
        if (x != (first == e1 ? 100 : 200) + peer || y != (second == e1 ? 100 : 200) + peer) {
            fprintf(stderr, "rank %d: created groups mixed their messages: %d %d\n", rank, x, y);
            exit(1);
        }
        check_all_reduce(e1, TETHER_FLOAT32, TETHER_SUM, 100, 0);
    }
    if (in_odd) {
        if (tether_group_rank(o) != rank / 2 || tether_group_size(o) != nodd) {
            fprintf(stderr, "rank %d: odd group gave rank %d\n", rank, tether_group_rank(o));
            exit(1);
        }
        check_all_reduce(o, TETHER_INT32, TETHER_SUM, 1000, 0);
    }
    tether_group_free(e1);
    tether_group_free(e2);
    tether_group_free(o);
    CHECK(tether_barrier(g));
}

/* Two levels of split, then two sibling groups driven by two threads at once. */
static void run_split(tether_group *g)
{
    int rank = tether_group_rank(g), size = tether_group_size(g);
    tether_group *half = NULL, *rev = NULL, *quarter = NULL;
    CHECK(tether_group_split(g, rank % 2, -1, &half));
    CHECK(tether_group_split(g, 0, size - rank, &rev)); /* everyone, reversed order */
    if (tether_group_rank(rev) != size - 1 - rank) {
        fprintf(stderr, "rank %d: reversed split gave rank %d\n", rank, tether_group_rank(rev));
        exit(1);
    }
    CHECK(tether_group_split(half, tether_group_rank(half) % 2, -1, &quarter));
    run_p2p(quarter);
    thread_arg a = {half, 20}, b = {rev, 20};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, hammer, &a);
    pthread_create(&tb, NULL, hammer, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    tether_group_free(quarter);
    tether_group_free(half);
    check_all_reduce(rev, TETHER_FLOAT64, TETHER_SUM, 100, 0);
    tether_group_free(rev);
    check_all_reduce(g, TETHER_FLOAT32, TETHER_SUM, 100, 0); /* the parent still works */
    run_create(g);
}

int main(int argc, char **argv)
{
    int large = 0, split = 0, p2p = 0, routed = 0, quick = 0, any_rate = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--large"))
            large = 1;
        else if (!strcmp(argv[i], "--split"))
            split = 1;
        else if (!strcmp(argv[i], "--p2p"))
            p2p = 1;
        else if (!strcmp(argv[i], "--routed"))
            routed = 1;
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--any-rate"))
            any_rate = 1;
        else {
            fprintf(stderr, "usage: coll_suite [--large] [--split] [--p2p] [--routed] [--quick] "
                            "[--any-rate]\n");
            return 2;
        }
    }
    tether_group *g = NULL;
    CHECK(tether_init("any", 0, &g));
    world_rank = tether_group_rank(g);
    if (large)
        run_large(g);
    else if (split)
        run_split(g);
    else if (routed)
        run_routed(g);
    else if (any_rate)
        run_any_rate(g);
    else if (p2p) {
        run_p2p(g);
        run_tagged(g);
        run_any(g);
        run_cancel(g);
    } else
        run_matrix(g, quick);
    CHECK(tether_barrier(g));
    if (world_rank == 0)
        printf("coll_suite: %d ranks over %s: all checks passed\n", tether_group_size(g),
               tether_group_backend(g));
    tether_group_free(g);
    return 0;
}
