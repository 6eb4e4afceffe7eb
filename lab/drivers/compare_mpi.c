/* lab/drivers/compare_mpi.c - Open MPI's reduce-scatter and all-to-all, the peer figures the
 * anchors lack. Built as lab_compare_mpi (lab/CMakeLists.txt) and run by lab/compare. Same protocol
 * as the anchors' drivers (../shared/anchors/src/bench_common.h, not copied): sizes 4, 8, 16, 64
 * ... x4 up to ANCHOR_MAXBYTES, verify once, calibrate with doubling batches until one lasts
 * ANCHOR_CAL_S, then 5 blocks of ~ANCHOR_TARGET_S in total; a block's time is the mean over ranks,
 * time = median block. Sizes follow nccl-tests: reduce_scatter = the input (N blocks), all_to_all =
 * the whole send buffer. Prints the driver-contract lines: coll nranks size_bytes time_us
 * algbw_GBps busbw_GBps */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double envd(const char *k, double d)
{
    const char *s = getenv(k);
    return s && *s ? atof(s) : d;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double mean_over_ranks(double t, int n)
{
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return t / n;
}

static void op(int rs, float *send, float *recv, int per_rank)
{
    if (rs)
        MPI_Reduce_scatter_block(send, recv, per_rank, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else
        MPI_Alltoall(send, per_rank, MPI_FLOAT, recv, per_rank, MPI_FLOAT, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int rs = argc > 1 && !strcmp(argv[1], "reduce_scatter");
    const char *name = rs ? "reduce_scatter" : "all_to_all";
    size_t maxb = (size_t)envd("ANCHOR_MAXBYTES", 64.0 * 1024 * 1024);
    double target = envd("ANCHOR_TARGET_S", 0.3), cal = envd("ANCHOR_CAL_S", 0.02);
    float *send = calloc(maxb / 4 + 16, 4), *recv = calloc(maxb / 4 + 16, 4);
    if (me == 0)
        printf("# system=mpi-tcp coll=%s nranks=%d dtype=float32 op=sum\n"
               "# fields: coll nranks size_bytes time_us algbw_GBps busbw_GBps\n",
               name, n);
    for (size_t size = 4; size <= maxb; size = size == 4 ? 8 : size == 8 ? 16 : size * 4) {
        int per_rank = (int)(size / 4 / (size_t)n);
        if (per_rank == 0)
            continue;
        size_t bytes = (size_t)per_rank * 4 * (size_t)n;
        for (int i = 0; i < per_rank * n; i++)
            send[i] = (float)(me + 1) + (float)(i % 7);
        op(rs, send, recv, per_rank);
        for (int i = 0; i < per_rank; i++) { /* verify once */
            float pattern = (float)((me * per_rank + i) % 7);
            for (int j = 0; j < (rs ? 1 : n); j++) { /* all_to_all: block j came from rank j */
                float want =
                    rs ? (float)(n * (n + 1) / 2) + (float)n * pattern : (float)(j + 1) + pattern;
                if (recv[j * per_rank + i] != want) {
                    fprintf(stderr, "VERIFY FAILED: rank %d %s index %d\n", me, name,
                            j * per_rank + i);
                    MPI_Abort(MPI_COMM_WORLD, 10);
                }
            }
        }
        long batch = 1;
        double per_op;
        for (;;) {
            double t0 = MPI_Wtime();
            for (long k = 0; k < batch; k++)
                op(rs, send, recv, per_rank);
            double t = mean_over_ranks(MPI_Wtime() - t0, n);
            if (t >= cal || batch >= (1L << 22)) {
                per_op = t / (double)batch;
                break;
            }
            batch *= 2;
        }
        long iters = (long)(target / 5 / per_op);
        if (iters < 1)
            iters = 1;
        double bt[5];
        for (int b = 0; b < 5; b++) {
            double t0 = MPI_Wtime();
            for (long k = 0; k < iters; k++)
                op(rs, send, recv, per_rank);
            bt[b] = mean_over_ranks(MPI_Wtime() - t0, n) / (double)iters;
        }
        qsort(bt, 5, sizeof bt[0], cmp);
        double algbw = (double)bytes / bt[2] / 1e9;
        if (me == 0) {
            printf("%s %d %zu %.3f %.6f %.6f\n", name, n, size, bt[2] * 1e6, algbw,
                   algbw * (n - 1) / n);
            fflush(stdout);
        }
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
