/* bench/bench_run.c - the measurement loop of `tether bench`: buffers per collective, warm-up, a
 * timed loop whose iteration count all ranks agree on, timed blocks averaged over the ranks,
 * optional checking, output. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench/bench.h"

typedef enum {
    C_ALL_REDUCE,
    C_ALL_GATHER,
    C_REDUCE_SCATTER,
    C_BROADCAST,
    C_ALL_TO_ALL,
    C_SEND_RECV,
    C_N
} coll_id;

static const char *const coll_names[C_N] = {"all_reduce", "all_gather", "reduce_scatter",
                                            "broadcast",  "all_to_all", "send_recv"};

/* nccl-tests' bus factors: busbw = algbw * factor, comparable to the link speed. */
static double bus_factor(coll_id c, int n)
{
    switch (c) {
    case C_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case C_ALL_GATHER:
    case C_REDUCE_SCATTER:
    case C_ALL_TO_ALL:
        return (double)(n - 1) / n;
    case C_BROADCAST:
    case C_SEND_RECV:
    case C_N:
        break;
    }
    return 1.0;
}

typedef struct run {
    tether_group *g;
    const bench_opts *o;
    coll_id c;
    size_t count; /* elements: per rank block for gather/scatter/all_to_all, else the whole */
    size_t es;
    char *send, *recv;
} run;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --pair A,B: this rank's part, 'A' (sends), 'B' (receives) or 0 (idle, or passing bytes on). */
static int pair_role(const run *r)
{
    int rank = tether_group_rank(r->g);
    return rank == r->o->pair[0] ? 'A' : rank == r->o->pair[1] ? 'B' : 0;
}

static int paired(const run *r)
{
    return r->c == C_SEND_RECV && r->o->pair[0] >= 0;
}

/* send_recv: every rank sends to rank+1 and receives from rank-1; even ranks send first so blocking
 * sends of large messages cannot all wait at once. With --pair, one way from A to B only. */
static int shift(run *r)
{
    int rank = tether_group_rank(r->g), n = tether_group_size(r->g);
    int to = (rank + 1) % n, from = (rank + n - 1) % n;
    tether_dtype dt = r->o->dt;
    if (paired(r)) {
        int role = pair_role(r);
        return role == 'A'   ? tether_send(r->g, r->send, r->count, dt, r->o->pair[1])
               : role == 'B' ? tether_recv(r->g, r->recv, r->count, dt, r->o->pair[0])
                             : TETHER_OK;
    }
    if (rank % 2 == 0) {
        int rc = tether_send(r->g, r->send, r->count, dt, to);
        return rc ? rc : tether_recv(r->g, r->recv, r->count, dt, from);
    }
    int rc = tether_recv(r->g, r->recv, r->count, dt, from);
    return rc ? rc : tether_send(r->g, r->send, r->count, dt, to);
}

/* --inplace: the all-reduce reads and writes recv, which holds the input (a copy of send). */
static int in_place(const run *r)
{
    return r->o->inplace && r->c == C_ALL_REDUCE;
}

/* Give an in-place run its input again (the calls before reduced into it). */
static void reload(run *r)
{
    if (in_place(r))
        memcpy(r->recv, r->send, r->count * r->es);
}

static int once(run *r)
{
    const bench_opts *o = r->o;
    switch (r->c) {
    case C_ALL_REDUCE:
        return tether_all_reduce(r->g, in_place(r) ? r->recv : r->send, r->recv, r->count, o->dt,
                                 o->op);
    case C_ALL_GATHER:
        return tether_all_gather(r->g, r->send, r->recv, r->count, o->dt);
    case C_REDUCE_SCATTER:
        return tether_reduce_scatter(r->g, r->send, r->recv, r->count, o->dt, o->op);
    case C_BROADCAST:
        return tether_broadcast(r->g, r->recv, r->count, o->dt, 0);
    case C_ALL_TO_ALL:
        return tether_all_to_all(r->g, r->send, r->recv, r->count, o->dt);
    case C_SEND_RECV:
        return shift(r);
    case C_N:
        break;
    }
    return TETHER_EINVAL;
}

/* --check values: rank r contributes r + 1 (or, for PROD, 2 on rank 0 and 1 elsewhere) so every
 * reduction is exact in every dtype; moved data is tagged with its source rank. */
static double contribution(const run *r, int rank)
{
    if (r->c == C_ALL_REDUCE || r->c == C_REDUCE_SCATTER)
        return r->o->op == TETHER_PROD ? (rank == 0 ? 2 : 1)
                                       : (r->o->dt == TETHER_BOOL ? rank % 2 : rank + 1);
    return (rank % 100) + 1;
}

static double reduced(const run *r)
{
    int n = tether_group_size(r->g);
    double acc = contribution(r, 0);
    for (int k = 1; k < n; k++) {
        double v = contribution(r, k);
        switch (r->o->op) {
        case TETHER_SUM:
            acc = r->o->dt == TETHER_BOOL ? (acc || v) : acc + v;
            break;
        case TETHER_PROD:
            acc *= v;
            break;
        case TETHER_MAX:
            acc = acc > v ? acc : v;
            break;
        case TETHER_MIN:
            acc = acc < v ? acc : v;
            break;
        case TETHER_OP_COUNT:
            break;
        }
    }
    return acc;
}

static void fill(run *r, size_t send_elems)
{
    int rank = tether_group_rank(r->g);
    for (size_t i = 0; i < send_elems; i++)
        bench_store(r->o->dt, r->send, i, contribution(r, rank));
    if (r->c == C_BROADCAST)
        for (size_t i = 0; i < r->count; i++)
            bench_store(r->o->dt, r->recv, i, rank == 0 ? contribution(r, 0) : 0);
}

/* Wrong elements of the last result. */
static int count_wrong(const run *r)
{
    int n = tether_group_size(r->g), rank = tether_group_rank(r->g), wrong = 0;
    size_t elems = r->count * ((r->c == C_ALL_GATHER || r->c == C_ALL_TO_ALL) ? (size_t)n : 1);
    if (paired(r) && pair_role(r) != 'B')
        return 0;
    for (size_t i = 0; i < elems; i++) {
        double want, im, got = bench_load(r->o->dt, r->recv, i, &im);
        switch (r->c) {
        case C_ALL_REDUCE:
        case C_REDUCE_SCATTER:
            want = reduced(r);
            break;
        case C_ALL_GATHER:
        case C_ALL_TO_ALL:
            want = contribution(r, (int)(i / r->count));
            break;
        case C_BROADCAST:
            want = contribution(r, 0);
            break;
        default:
            want = contribution(r, paired(r) ? r->o->pair[0] : (rank + n - 1) % n);
            break;
        }
        wrong += got != want;
    }
    return wrong;
}

/* Zeroed, page-aligned: how frameworks allocate tensors, and how the anchors' drivers (and
 * nccl-tests) allocate theirs, so the kernel's copies see the same alignment in every column. */
static void *page_alloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, bytes) != 0)
        return NULL;
    return memset(p, 0, bytes);
}

static int setup(run *r, size_t bytes)
{
    int n = tether_group_size(r->g);
    size_t elems = bytes / r->es, send_elems, recv_elems;
    switch (r->c) {
    case C_ALL_GATHER:
        r->count = elems / (size_t)n;
        send_elems = r->count;
        recv_elems = r->count * (size_t)n;
        break;
    case C_REDUCE_SCATTER:
        r->count = elems / (size_t)n;
        send_elems = r->count * (size_t)n;
        recv_elems = r->count;
        break;
    case C_ALL_TO_ALL:
        r->count = elems / (size_t)n;
        send_elems = recv_elems = r->count * (size_t)n;
        break;
    default:
        r->count = elems;
        send_elems = recv_elems = elems;
        break;
    }
    if (paired(r) && !pair_role(r)) /* no buffers: its peak memory is what passing on costs */
        send_elems = recv_elems = 0;
    r->send = page_alloc((send_elems ? send_elems : 1) * r->es);
    r->recv = page_alloc((recv_elems ? recv_elems : 1) * r->es);
    if (!r->send || !r->recv) {
        fprintf(stderr, "tether bench: out of memory for %zu bytes\n", bytes);
        return 1;
    }
    fill(r, send_elems);
    reload(r);
    return 0;
}

static int fail(const run *r, int rc)
{
    fprintf(stderr, "tether bench: rank %d: %s: %s: %s\n", tether_group_rank(r->g),
            coll_names[r->c], tether_err_name(rc), tether_last_error());
    return 1;
}

/* Slowest rank's value, so every rank decides the same. */
static int max_over_ranks(tether_group *g, double *v)
{
    return tether_all_reduce(g, v, v, 1, TETHER_FLOAT64, TETHER_MAX);
}

/* Mean over ranks, the time nccl-tests (and the anchors' drivers) report: a broadcast root that is
 * done early counts as done early. Every rank gets the same value. */
static int mean_over_ranks(tether_group *g, double *v)
{
    int rc = tether_all_reduce(g, v, v, 1, TETHER_FLOAT64, TETHER_SUM);
    *v /= tether_group_size(g);
    return rc;
}

/* A block's time per iteration: the mean over ranks, or with --pair the receiver's (the slowest:
 * the idle ranks' zeros would halve a mean). */
static int block_time(const run *r, double *v)
{
    return paired(r) ? max_over_ranks(r->g, v) : mean_over_ranks(r->g, v);
}

/* The largest peak resident memory of the ranks neither sending nor receiving with --pair (those
 * passing the bytes on, on a ring), in bytes; 0 on every rank when there are none. */
static int passing_peak(const run *r, double *bytes)
{
    struct rusage ru;
    *bytes = 0;
    if (!pair_role(r) && getrusage(RUSAGE_SELF, &ru) == 0)
#ifdef __APPLE__
        *bytes = (double)ru.ru_maxrss; /* bytes there, KiB on Linux */
#else
        *bytes = (double)ru.ru_maxrss * 1024;
#endif
    return max_over_ranks(r->g, bytes);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_header(const bench_opts *o, int n, const char *backend)
{
    if (o->csv) {
        printf("collective,ranks,size_bytes,count,type,redop,root,time_us,algbw_GBps,busbw_GBps,"
               "wrong\n");
        return;
    }
    printf("# tether bench: %d ranks over %s\n", n, backend);
    printf("# %12s %12s %9s %6s %5s %12s %9s %9s %7s\n", "size(B)", "count", "type", "redop",
           "root", "time(us)", "algbw", "busbw", "#wrong");
}

/* peak: with --pair, passing_peak's bytes (0: no rank passes anything on). */
static void print_row(const run *r, FILE *json, size_t bytes, double t, double algbw, double busbw,
                      int wrong, double peak)
{
    const bench_opts *o = r->o;
    static const char *const dts[] = {"bool",     "int8",    "uint8",   "int16",    "uint16",
                                      "int32",    "uint32",  "int64",   "uint64",   "float16",
                                      "bfloat16", "float32", "float64", "complex64"};
    static const char *const ops[] = {"sum", "prod", "max", "min"};
    int reducing = r->c == C_ALL_REDUCE || r->c == C_REDUCE_SCATTER;
    const char *op = reducing ? ops[o->op] : "none", *root = r->c == C_BROADCAST ? "0" : "-1";
    char wrong_s[16];
    snprintf(wrong_s, sizeof wrong_s, "%d", wrong);
    if (o->csv)
        printf("%s,%d,%zu,%zu,%s,%s,%s,%.2f,%.3f,%.3f,%s\n", coll_names[r->c],
               tether_group_size(r->g), bytes, r->count, dts[o->dt], op, root, t * 1e6, algbw,
               busbw, o->check ? wrong_s : "N/A");
    else
        printf("%s%14zu %12zu %9s %6s %5s %12.2f %9.3f %9.3f %7s\n", "", bytes, r->count,
               dts[o->dt], op, root, t * 1e6, algbw, busbw, o->check ? wrong_s : "N/A");
    if (peak > 0 && !o->csv)
        printf("# ranks between %d and %d: peak memory %.1f MiB (whole process, no buffers)\n",
               o->pair[0], o->pair[1], peak / (1 << 20));
    if (!json)
        return;
    fprintf(json,
            "%s{\"collective\":\"%s\",\"ranks\":%d,\"size_bytes\":%zu,\"count\":%zu,\"type\":"
            "\"%s\","
            "\"time_us\":%.3f,\"algbw_GBps\":%.4f,\"busbw_GBps\":%.4f,\"wrong\":%d",
            ftell(json) > 2 ? ",\n" : "", coll_names[r->c], tether_group_size(r->g), bytes,
            r->count, dts[o->dt], t * 1e6, algbw, busbw, wrong);
    if (peak > 0)
        fprintf(json, ",\"passing_peak_rss_bytes\":%.0f", peak);
    fputs("}", json);
}

/* Release a run's buffers and pass rc through. */
static int finish(run *r, int rc)
{
    free(r->send);
    free(r->recv);
    r->send = r->recv = NULL;
    return rc;
}

/* The least warm-up per size, in seconds, when -w asks for any. */
#define WARM_S 0.02

/* One size of one collective: warm up, time one iteration so all ranks agree how many fit the time
 * budget, time them in o->blocks blocks (each block's time is the mean over ranks; the row shows
 * the median block), then check the last result (inputs are never overwritten: out of place). */
static int one_size(run *r, size_t bytes, FILE *json, int *nwrong)
{
    const bench_opts *o = r->o;
    int rc = 0, n = tether_group_size(r->g);
    if (setup(r, bytes))
        return finish(r, 1);
    for (int i = 0; i < o->warmup && !rc; i++)
        rc = once(r);
    double probe = now_s();
    if (!rc)
        rc = once(r);
    probe = now_s() - probe;
    if (!rc)
        rc = max_over_ranks(r->g, &probe);
    /* then warm up for WARM_S at least (every rank counts the same, from the agreed probe): a few
     * calls left the first size of a sweep on connections still in TCP's quick-ACK start, up to
     * 1.5x slower than the same size later in the sweep; the anchors warm up 40 ms or more */
    for (long i = 0, more = o->warmup > 0 && probe > 0 ? (long)(WARM_S / probe) : 0;
         i < more && !rc; i++)
        rc = once(r);
    int iters = o->iters;
    if (probe * iters > o->seconds)
        iters = probe < o->seconds ? (int)(o->seconds / probe) : 1;
    int blocks = iters < o->blocks ? iters : o->blocks;
    iters /= blocks;
    double bt[BENCH_MAX_BLOCKS];
    if (!rc)
        rc = tether_barrier(r->g);
    for (int b = 0; b < blocks && !rc; b++) {
        double t0 = now_s();
        for (int i = 0; i < iters && !rc; i++)
            rc = once(r);
        bt[b] = (now_s() - t0) / iters;
        if (!rc)
            rc = block_time(r, &bt[b]);
    }
    qsort(bt, (size_t)blocks, sizeof bt[0], cmp_double);
    double t = blocks % 2 ? bt[blocks / 2] : (bt[blocks / 2 - 1] + bt[blocks / 2]) / 2;
    double wrong = 0;
    if (!rc && o->check && in_place(r)) { /* the timed calls reduced into the input: once more */
        reload(r);
        rc = once(r);
    }
    if (!rc && o->check) {
        wrong = count_wrong(r);
        rc = tether_all_reduce(r->g, &wrong, &wrong, 1, TETHER_FLOAT64, TETHER_SUM);
    }
    double peak = 0;
    if (!rc && paired(r))
        rc = passing_peak(r, &peak);
    if (rc)
        return finish(r, fail(r, rc));
    *nwrong += (int)wrong;
    int grouped = r->c == C_ALL_GATHER || r->c == C_REDUCE_SCATTER || r->c == C_ALL_TO_ALL;
    size_t shown = r->count * r->es * (grouped ? (size_t)n : 1);
    double algbw = t > 0 ? (double)shown / t / 1e9 : 0;
    if (tether_group_rank(r->g) == 0) {
        print_row(r, json, shown, t, algbw, algbw * bus_factor(r->c, n), (int)wrong, peak);
        fflush(stdout);
        if (t * iters * blocks > 1.0) /* progress for long runs, off the table's stream */
            fprintf(stderr, "[tether bench] %s %zu bytes: %.1f us\n", coll_names[r->c], shown,
                    t * 1e6);
    }
    return finish(r, 0);
}

int bench_run(tether_group *g, const bench_opts *o, int *nwrong)
{
    int n = tether_group_size(g), all = !strcmp(o->coll, "all"), any = 0;
    FILE *json = NULL;
    *nwrong = 0;
    if (o->json && tether_group_rank(g) == 0) {
        if (!(json = fopen(o->json, "w"))) {
            perror(o->json);
            return 1;
        }
        fputs("[", json);
    }
    if (tether_group_rank(g) == 0)
        print_header(o, n, tether_group_backend(g));
    if (o->pair[0] >= 0 && (o->pair[0] >= n || o->pair[1] >= n || strcmp(o->coll, "send_recv"))) {
        if (tether_group_rank(g) == 0)
            fprintf(stderr, "tether bench: --pair %d,%d needs -c send_recv and ranks below %d\n",
                    o->pair[0], o->pair[1], n);
        if (json)
            fclose(json);
        return 1;
    }
    int rc = 0;
    for (int c = 0; c < C_N && !rc; c++) {
        if (!all && strcmp(o->coll, coll_names[c]))
            continue;
        any = 1;
        if (c == C_SEND_RECV && n < 2)
            continue;
        run r = {.g = g, .o = o, .c = (coll_id)c, .es = tether_dtype_size(o->dt)};
        for (size_t bytes = o->min_bytes; bytes <= o->max_bytes && !rc; bytes *= (size_t)o->factor)
            rc = one_size(&r, bytes, json, nwrong);
    }
    if (json) {
        fputs("]\n", json);
        fclose(json);
    }
    if (!any) {
        fprintf(stderr,
                "tether bench: unknown collective \"%s\"; expected all_reduce, all_gather, "
                "reduce_scatter, broadcast, all_to_all, send_recv or all\n",
                o->coll);
        return 1;
    }
    if (!rc && o->check && tether_group_rank(g) == 0)
        printf("# %s: %d wrong elements\n", *nwrong ? "FAILED" : "checked", *nwrong);
    return rc;
}
