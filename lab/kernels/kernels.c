/* lab/kernels/kernels.c - reduction-kernel microbenchmark: tether__reduce per dtype and op, the
 * bf16 wire kernels and memcpy, each as GB/s and elements/s, all in one run of one process.
 * The kernels are the set the library picks for this CPU ("avx2" on x86-64 with AVX2 and F16C), or
 * the portable C set with --portable: the header line says which.
 *
 * Built as lab_kernels with the tree (lab/CMakeLists.txt; it needs the internal core/reduce.h, so
 * it is not part of the `tether` command). Single thread, like the collectives' reduction step.
 *
 * Words: S is the destination buffer's size in bytes. A kernel's "GB/s" is S per second (what
 * anchors' membw reports): memcpy reads S and writes S, a reduction reads 2S and writes S. "Gel/s"
 * is 1e9 elements per second, the figure to compare across dtypes of different widths. Rows: kernel
 * dtype op bytes best_GBps median_GBps best_Gelps vs_memcpy vs_f32 vs_memcpy = best_GBps / memcpy's
 * best GB/s at the same S; vs_f32 = best_Gelps / the float32 kernel's best_Gelps for the same op at
 * the same S (the bf16/fp16 targets are stated in elements/s). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/reduce.h"
#include "core/size_arg.h"
#include "tether.h"

static const char *const dtype_names[TETHER_DTYPE_COUNT] = {
    "bool",  "int8",   "uint8",   "int16",    "uint16",  "int32",   "uint32",
    "int64", "uint64", "float16", "bfloat16", "float32", "float64", "complex64"};
static const char *const op_names[TETHER_OP_COUNT] = {"sum", "prod", "max", "min"};

typedef struct opts {
    size_t sizes[8];
    int nsizes;
    int reps;     /* rounds, each timing every row once; best and median reported */
    double min_s; /* each repetition runs the kernel until it lasts at least this */
    int csv;
    int all_dtypes; /* 0: the dtypes that matter for training (float32, float16, bfloat16, ...) */
    int portable;   /* 1: the portable kernels instead of the CPU's best */
} opts;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* What one row times: a kernel over the two buffers. */
typedef enum { K_MEMCPY, K_REDUCE, K_TO_BF16, K_BF16_INTO_F32 } kind;

typedef struct row {
    kind k;
    tether_dtype dt;
    tether_op op;
    size_t bytes; /* S: bytes of dst */
    size_t elems;
} row;

static void kernel(const row *r, void *dst, const void *src)
{
    switch (r->k) {
    case K_MEMCPY:
        memcpy(dst, src, r->bytes);
        break;
    case K_REDUCE:
        tether__reduce(dst, src, r->elems, r->dt, r->op);
        break;
    case K_TO_BF16:
        tether__floats_to_bf16(dst, src, r->elems);
        break;
    case K_BF16_INTO_F32:
        tether__reduce_bf16_into_f32(dst, src, r->elems, r->op);
        break;
    }
}

/* The element type of src: the wire kernels read another type than they write. */
static tether_dtype src_type(const row *r)
{
    return r->k == K_TO_BF16 ? TETHER_FLOAT32 : r->k == K_BF16_INTO_F32 ? TETHER_BFLOAT16 : r->dt;
}

/* Inputs that stay finite and normal however often the kernel runs: sums of 0/1 grow slowly or
 * saturate (float16 stops at 2048), products of 1 stay put. Zero bytes are 0 in every dtype. */
static void fill(const row *r, void *dst, void *src, size_t src_bytes)
{
    memset(dst, 0, r->bytes);
    memset(src, 0, src_bytes);
    if (r->k == K_MEMCPY)
        return;
    uint16_t one_h = tether__float_to_half(1.0f), one_b = tether__float_to_bf16(1.0f);
    for (size_t i = 0; i < r->elems; i++) {
        int one = r->op == TETHER_PROD || (i & 1);
        if (!one)
            continue;
        switch (src_type(r)) {
        case TETHER_BOOL:
        case TETHER_INT8:
        case TETHER_UINT8:
            ((uint8_t *)src)[i] = 1;
            break;
        case TETHER_INT16:
        case TETHER_UINT16:
            ((uint16_t *)src)[i] = 1;
            break;
        case TETHER_INT32:
        case TETHER_UINT32:
            ((uint32_t *)src)[i] = 1;
            break;
        case TETHER_INT64:
        case TETHER_UINT64:
            ((uint64_t *)src)[i] = 1;
            break;
        case TETHER_FLOAT16:
            ((uint16_t *)src)[i] = one_h;
            break;
        case TETHER_BFLOAT16:
            ((uint16_t *)src)[i] = one_b;
            break;
        case TETHER_FLOAT32:
            ((float *)src)[i] = 1.0f;
            break;
        case TETHER_FLOAT64:
            ((double *)src)[i] = 1.0;
            break;
        case TETHER_COMPLEX64:
            ((float *)src)[2 * i] = 1.0f;
            break;
        case TETHER_DTYPE_COUNT:
            break;
        }
    }
    if (r->op == TETHER_PROD) /* dst = src: products of ones */
        memcpy(dst, src, r->bytes < src_bytes ? r->bytes : src_bytes);
}

/* How many calls of a row one repetition makes: enough to last min_s. */
static long calibrate(const row *r, const opts *o, void *dst, void *src, size_t src_bytes)
{
    long calls = 1;
    fill(r, dst, src, src_bytes);
    kernel(r, dst, src);
    for (;;) {
        double t0 = now_s();
        for (long c = 0; c < calls; c++)
            kernel(r, dst, src);
        double dt = now_s() - t0;
        if (dt >= o->min_s || calls >= (1L << 24))
            return calls;
        calls *= dt > o->min_s / 64 ? 2 : 16;
    }
}

/* One repetition of a row, in seconds per call: inputs filled afresh, one untimed call to warm up.
 */
static double time_once(const row *r, long calls, void *dst, void *src, size_t src_bytes)
{
    fill(r, dst, src, src_bytes);
    kernel(r, dst, src);
    double t0 = now_s();
    for (long c = 0; c < calls; c++)
        kernel(r, dst, src);
    return (now_s() - t0) / (double)calls;
}

static const char *kind_name(kind k)
{
    switch (k) {
    case K_MEMCPY:
        return "memcpy";
    case K_REDUCE:
        return "reduce";
    case K_TO_BF16:
        return "f32_to_bf16";
    case K_BF16_INTO_F32:
        return "bf16_into_f32";
    }
    return "?";
}

static void print_row(const opts *o, const row *r, double best, double median, double memcpy_gbps,
                      double f32_gelps)
{
    double gbps = (double)r->bytes / best / 1e9, med = (double)r->bytes / median / 1e9;
    double gelps = (double)r->elems / best / 1e9;
    const char *dt = r->k == K_MEMCPY ? "-" : dtype_names[r->dt];
    const char *op = (r->k == K_REDUCE || r->k == K_BF16_INTO_F32) ? op_names[r->op] : "-";
    double vs_f32 = f32_gelps > 0 ? gelps / f32_gelps : 0;
    if (o->csv)
        printf("%s,%s,%s,%zu,%.3f,%.3f,%.4f,%.3f,%.3f\n", kind_name(r->k), dt, op, r->bytes, gbps,
               med, gelps, gbps / memcpy_gbps, vs_f32);
    else
        printf("%-14s %-10s %-5s %10zu %9.2f %9.2f %9.3f %9.2f %7.2f\n", kind_name(r->k), dt, op,
               r->bytes, gbps, med, gelps, gbps / memcpy_gbps, vs_f32);
    fflush(stdout);
}

/* All rows at one size S, timed in rounds: each round times every row once, and each row keeps its
 * best and median over the rounds. Timing each row in one stretch instead let the load of other
 * jobs (two cores, shared) fall on some rows and spare others, and the ratios between rows reported
 * that: the same loop as float32 sum and as float32 prod came out 1.8x apart, memcpy at 256 KiB 99
 * GB/s in one run and 29 in the next. Rounds spread every row over the same stretch of time. */
#define MAX_ROWS (1 + TETHER_DTYPE_COUNT * TETHER_OP_COUNT + 2)
static int run_size(const opts *o, size_t bytes)
{
    /* src may hold S float32 for f32_to_bf16 (dst is then S bytes of bf16 = 2S of input) */
    size_t src_bytes = 2 * bytes;
    void *dst = NULL, *src = NULL;
    if (posix_memalign(&dst, 4096, bytes) || posix_memalign(&src, 4096, src_bytes)) {
        fprintf(stderr, "kernels: out of memory for %zu bytes\n", bytes);
        free(dst);
        return 1;
    }
    row rows[MAX_ROWS];
    int nrows = 0;
    rows[nrows++] = (row){.k = K_MEMCPY, .bytes = bytes, .elems = bytes};
    /* float32 first: the other rows are compared with it */
    static const tether_dtype order_all[] = {
        TETHER_FLOAT32, TETHER_BFLOAT16, TETHER_FLOAT16, TETHER_FLOAT64,  TETHER_INT32,
        TETHER_INT64,   TETHER_INT8,     TETHER_UINT8,   TETHER_INT16,    TETHER_UINT16,
        TETHER_UINT32,  TETHER_UINT64,   TETHER_BOOL,    TETHER_COMPLEX64};
    int ndt = o->all_dtypes ? (int)(sizeof order_all / sizeof order_all[0]) : 6;
    for (int d = 0; d < ndt; d++) {
        tether_dtype dt = order_all[d];
        for (int op = 0; op < TETHER_OP_COUNT; op++)
            if (tether__op_valid(dt, (tether_op)op))
                rows[nrows++] = (row){.k = K_REDUCE,
                                      .dt = dt,
                                      .op = (tether_op)op,
                                      .bytes = bytes,
                                      .elems = bytes / tether_dtype_size(dt)};
    }
    /* bf16 on the wire. Sender: S/2 float32 elements (2S bytes) converted into S bytes of bf16.
     * Receiver: S/4 bf16 elements (S/2 bytes) accumulated into S bytes of float32. */
    rows[nrows++] =
        (row){.k = K_TO_BF16, .dt = TETHER_BFLOAT16, .bytes = bytes, .elems = bytes / 2};
    rows[nrows++] = (row){.k = K_BF16_INTO_F32,
                          .dt = TETHER_FLOAT32,
                          .op = TETHER_SUM,
                          .bytes = bytes,
                          .elems = bytes / 4};

    long calls[MAX_ROWS];
    static double t[MAX_ROWS][64];
    int reps = o->reps < 64 ? o->reps : 64;
    for (int i = 0; i < nrows; i++)
        calls[i] = calibrate(&rows[i], o, dst, src, src_bytes);
    for (int k = 0; k < reps; k++)
        for (int i = 0; i < nrows; i++)
            t[i][k] = time_once(&rows[i], calls[i], dst, src, src_bytes);

    double memcpy_gbps = 0, f32_gelps[TETHER_OP_COUNT] = {0};
    for (int i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        qsort(t[i], (size_t)reps, sizeof t[i][0], cmp_double);
        double best = t[i][0], median = t[i][reps / 2], gelps = (double)r->elems / best / 1e9;
        if (r->k == K_MEMCPY)
            memcpy_gbps = (double)bytes / best / 1e9;
        if (r->k == K_REDUCE && r->dt == TETHER_FLOAT32)
            f32_gelps[r->op] = gelps;
        print_row(o, r, best, median, memcpy_gbps, r->k == K_MEMCPY ? 0 : f32_gelps[r->op]);
    }
    free(dst);
    free(src);
    return 0;
}

/* -s: a size (core/size_arg.h) of at least 64 bytes, rounded down to whole elements of every
 * dtype; 0 after printing why when it is not one. */
static size_t size_arg(const char *text)
{
    char err[TETHER__SIZE_ERR_MAX];
    size_t v;
    if (tether__size_parse("-s", text, &v, err, sizeof err) != 0) {
        fprintf(stderr, "kernels: %s\n", err);
        return 0;
    }
    if (v < 64) {
        fprintf(stderr, "kernels: -s: '%s' is below the smallest size, 64 bytes\n", text);
        return 0;
    }
    return v & ~(size_t)63;
}

static const char *const usage =
    "usage: kernels [-s SIZE]... [-r REPS] [-t SECONDS] [--all] [--portable] [--csv]\n"
    "  -s SIZE   destination buffer size such as 256K, 64M (repeatable; default 256K and 64M:\n"
    "            one cache-resident segment, one far beyond the last-level cache)\n"
    "  -r REPS   rounds (default 5): each times every row once; best and median are printed\n"
    "  -t SEC    each repetition lasts at least SEC seconds (default 0.05)\n"
    "  --all     every dtype (default: float32, bfloat16, float16, float64, int32, int64)\n"
    "  --portable  the portable C kernels, not the ones chosen for this CPU\n"
    "  --csv     kernel,dtype,op,bytes,best_GBps,median_GBps,best_Gelps,vs_memcpy,vs_f32\n";

int main(int argc, char **argv)
{
    opts o = {.reps = 5, .min_s = 0.05};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-s") && v && o.nsizes < 8 && (o.sizes[o.nsizes] = size_arg(v)))
            o.nsizes++, i++;
        else if (!strcmp(a, "-r") && v && (o.reps = atoi(v)) > 0)
            i++;
        else if (!strcmp(a, "-t") && v && (o.min_s = atof(v)) > 0)
            i++;
        else if (!strcmp(a, "--all"))
            o.all_dtypes = 1;
        else if (!strcmp(a, "--csv"))
            o.csv = 1;
        else if (!strcmp(a, "--portable"))
            o.portable = 1;
        else {
            fprintf(stderr, "kernels: bad argument '%s'\n%s", a, usage);
            return 2;
        }
    }
    if (!o.nsizes) {
        o.sizes[o.nsizes++] = 256u << 10;
        o.sizes[o.nsizes++] = 64u << 20;
    }
    const char *set = tether__reduce_select(o.portable);
    if (o.csv)
        puts("kernel,dtype,op,bytes,best_GBps,median_GBps,best_Gelps,vs_memcpy,vs_f32");
    else {
        printf("# one thread, %s kernels; GB/s = bytes of dst per second (memcpy moves 2S, a "
               "reduction "
               "3S); Gel/s = 1e9 elements/s\n",
               set);
        printf("# %-12s %-10s %-5s %10s %9s %9s %9s %9s %7s\n", "kernel", "dtype", "op", "bytes",
               "best", "median", "Gel/s", "vs_memcpy", "vs_f32");
    }
    for (int i = 0; i < o.nsizes; i++)
        if (run_size(&o, o.sizes[i]))
            return 1;
    return 0;
}
