/* bench/bench.c - `tether bench`: nccl-tests-style timing of each collective over a range of sizes.
 * Run under `tether launch -n N`. Rank 0 prints size, count, type, redop, root, time (us), algbw
 * and busbw (GB/s, nccl-tests bus factors) and #wrong; a time is the mean per iteration over the
 * ranks, as in nccl-tests, and with -B the median of that many timed blocks (the anchors'
 * protocol). */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "cli/commands.h"
#include "core/params.h"
#include "core/size_arg.h"
#include "tether.h"

static const char *const usage =
    "usage: tether bench [-c COLL] [-b MIN] [-e MAX] [-f FACTOR] [-w WARMUP] [-n ITERS]\n"
    "                    [-t SECONDS] [-B BLOCKS] [-d DTYPE] [-o OP] [--algo A] [--inplace]\n"
    "                    [--pair A,B] [--check] [--json FILE] [--csv]\n"
    "Run under `tether launch -n N`. Times each collective from MIN to MAX bytes, multiplying by\n"
    "FACTOR.\n"
    "  -c COLL     all_reduce (default), all_gather, reduce_scatter, broadcast, all_to_all,\n"
    "              send_recv, all\n"
    "  -b, -e      smallest and largest size in bytes, such as 8, 64K, 1M, 2G (K, M, G, T: x1024;\n"
    "              default 8 and 64M)\n"
    "  -f FACTOR   size multiplier between rows (default 2)\n"
    "  -w WARMUP   untimed iterations per size (default 5), then more for 20 ms (none if 0)\n"
    "  -n ITERS    timed iterations per size (default 20); -t caps their time (default 2 s)\n"
    "  -B BLOCKS   time them in BLOCKS blocks and show the median block (default 1, max 64);\n"
    "              a block's time per iteration is the mean over ranks, as in nccl-tests\n"
    "  -d DTYPE    float32 (default), float16, bfloat16, float64, int32, int64, uint8, ...\n"
    "  -o OP       sum (default), prod, max, min\n"
    "  --algo A    all-reduce algorithm: auto, ring, tree, butterfly, direct, neighbor\n"
    "              (sets TETHER_ALLREDUCE_ALGO)\n"
    "  --inplace   all_reduce in place (send == recv), like nccl-tests' in-place columns\n"
    "  --pair A,B  send_recv from rank A to rank B only, one way; the ranks between them on a\n"
    "              ring pass the bytes on, and their peak memory is shown\n"
    "  --check     fill known values and count wrong elements (#wrong column)\n"
    "  --json FILE write the rows as JSON too;  --csv  print CSV instead of the table\n";

static const char *const dtype_names[] = {"bool",     "int8",    "uint8",   "int16",    "uint16",
                                          "int32",    "uint32",  "int64",   "uint64",   "float16",
                                          "bfloat16", "float32", "float64", "complex64"};
static const char *const op_names[] = {"sum", "prod", "max", "min"};

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

static int parse_args(int argc, char **argv, bench_opts *o)
{
    enum { OPT_ALGO = 256, OPT_INPLACE, OPT_PAIR, OPT_CHECK, OPT_JSON, OPT_CSV, OPT_HELP };
    static const struct option longs[] = {
        {"algo", required_argument, 0, OPT_ALGO}, {"inplace", no_argument, 0, OPT_INPLACE},
        {"pair", required_argument, 0, OPT_PAIR}, {"check", no_argument, 0, OPT_CHECK},
        {"json", required_argument, 0, OPT_JSON}, {"csv", no_argument, 0, OPT_CSV},
        {"help", no_argument, 0, OPT_HELP},       {0, 0, 0, 0}};
    *o = (bench_opts){.coll = "all_reduce",
                      .min_bytes = 8,
                      .max_bytes = 64u << 20,
                      .factor = 2,
                      .warmup = 5,
                      .iters = 20,
                      .blocks = 1,
                      .seconds = 2.0,
                      .dt = TETHER_FLOAT32,
                      .op = TETHER_SUM,
                      .pair = {-1, -1}};
    optind = 1;
    int c;
    char err[TETHER__SIZE_ERR_MAX];
    while ((c = getopt_long(argc, argv, "c:b:e:f:w:n:t:B:d:o:h", longs, NULL)) != -1) {
        switch (c) {
        case 'c':
            o->coll = optarg;
            break;
        case 'b':
        case 'e':
            if (tether__size_parse(c == 'b' ? "-b" : "-e", optarg,
                                   c == 'b' ? &o->min_bytes : &o->max_bytes, err,
                                   sizeof err) != 0) {
                fprintf(stderr, "tether bench: %s\n%s", err, usage);
                return 2;
            }
            break;
        case 'f':
            o->factor = atoi(optarg);
            break;
        case 'w':
            o->warmup = atoi(optarg);
            break;
        case 'n':
            o->iters = atoi(optarg);
            break;
        case 't':
            o->seconds = atof(optarg);
            break;
        case 'B':
            o->blocks = atoi(optarg);
            break;
        case 'd':
            o->dt = lookup(optarg, dtype_names, TETHER_DTYPE_COUNT);
            break;
        case 'o':
            o->op = lookup(optarg, op_names, TETHER_OP_COUNT);
            break;
        case OPT_ALGO:
            setenv(TETHER__VAR(ALLREDUCE_ALGO), optarg, 1);
            break;
        case OPT_INPLACE:
            o->inplace = 1;
            break;
        case OPT_PAIR: {
            char end;
            if (sscanf(optarg, "%d,%d%c", &o->pair[0], &o->pair[1], &end) != 2 || o->pair[0] < 0 ||
                o->pair[1] < 0 || o->pair[0] == o->pair[1])
                o->pair[0] = -2; /* reported below */
            break;
        }
        case OPT_CHECK:
            o->check = 1;
            break;
        case OPT_JSON:
            o->json = optarg;
            break;
        case OPT_CSV:
            o->csv = 1;
            break;
        case 'h':
        case OPT_HELP:
            fputs(usage, stdout);
            return 1;
        default:
            fputs(usage, stderr);
            return 2;
        }
    }
    const char *bad = NULL;
    if (optind < argc)
        bad = argv[optind];
    else if (!o->min_bytes || !o->max_bytes || o->min_bytes > o->max_bytes)
        bad = "-b/-e (sizes like 8, 4K, 64M with -b <= -e)";
    else if (o->factor < 2)
        bad = "-f (a whole number >= 2)";
    else if (o->iters < 1 || o->warmup < 0 || o->seconds <= 0)
        bad = "-n/-w/-t";
    else if (o->blocks < 1 || o->blocks > BENCH_MAX_BLOCKS)
        bad = "-B (1 to 64 blocks)";
    else if ((int)o->dt < 0)
        bad = "-d (a dtype name such as float32)";
    else if ((int)o->op < 0)
        bad = "-o (sum, prod, max or min)";
    else if (o->pair[0] == -2)
        bad = "--pair (two different ranks, such as 0,2)";
    if (bad) {
        fprintf(stderr, "tether bench: bad argument: %s\n%s", bad, usage);
        return 2;
    }
    return 0;
}

int tether__cmd_bench(int argc, char **argv)
{
    bench_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    tether_group *g = NULL;
    if (tether_init("any", 0, &g) != TETHER_OK) {
        fprintf(stderr, "tether bench: tether_init: %s\n", tether_last_error());
        return 1;
    }
    int nwrong = 0;
    rc = bench_run(g, &o, &nwrong);
    tether_group_free(g);
    if (rc)
        return 1;
    return nwrong ? 3 : 0;
}
