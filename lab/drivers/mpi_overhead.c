/* lab/drivers/mpi_overhead.c - what the mpi backend costs over calling MPI directly, measured in
 * one process: the same collective on a duplicate of MPI_COMM_WORLD, raw and through tether
 * (backends/mpi), in alternating blocks, so both see the same MPI, thread level, network and load.
 * Prints per size the median block of each (mean over ranks) and their ratio and difference.
 * Built as lab_mpi_overhead with the tree where Open MPI's development files are
 * (lab/CMakeLists.txt; docs/mpi.md):
 *
 *   mpirun -n 2 build/lab/lab_mpi_overhead allreduce|allgather|broadcast
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether.h"

#define BLOCKS 11
#define MAX_BYTES (16u << 20)

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One call of coll on count floats per rank: raw MPI on comm, or tether on g. */
static void call(const char *coll, int tether, tether_group *g, MPI_Comm comm, float *a, float *b,
                 size_t count)
{
    int rc = 0;
    if (!strcmp(coll, "allreduce"))
        rc = tether ? tether_all_reduce(g, a, a, count, TETHER_FLOAT32, TETHER_SUM)
                    : MPI_Allreduce(MPI_IN_PLACE, a, (int)count, MPI_FLOAT, MPI_SUM, comm);
    else if (!strcmp(coll, "allgather"))
        rc = tether ? tether_all_gather(g, a, b, count, TETHER_FLOAT32)
                    : MPI_Allgather(a, (int)count, MPI_FLOAT, b, (int)count, MPI_FLOAT, comm);
    else
        rc = tether ? tether_broadcast(g, a, count, TETHER_FLOAT32, 0)
                    : MPI_Bcast(a, (int)count, MPI_FLOAT, 0, comm);
    if (rc) {
        fprintf(stderr, "mpi_overhead: %s (%s) failed: %d %s\n", coll, tether ? "tether" : "MPI",
                rc, tether ? tether_last_error() : "");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    int provided, me, n;
    /* as tether would initialise MPI itself: both columns run at the same thread level */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    const char *coll = argc > 1 ? argv[1] : "allreduce";
    tether_group *g;
    if (tether_init("mpi", 1, &g) != TETHER_OK) {
        fprintf(stderr, "mpi_overhead: %s\n", tether_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    float *a = calloc(MAX_BYTES / 4, 4), *b = calloc((size_t)n * MAX_BYTES / 4, 4);
    if (me == 0)
        printf("# %s, %d ranks: median of %d alternating blocks (mean over ranks), us per call\n"
               "# bytes  raw_mpi  tether_mpi  ratio  diff_us\n",
               coll, n, BLOCKS);
    for (size_t bytes = 8; bytes <= MAX_BYTES; bytes *= bytes < 1024 ? 128 : 4) {
        size_t count = bytes / 4;
        int iters = bytes <= 65536 ? 2000 : bytes <= (1u << 20) ? 100 : 10;
        double t[2][BLOCKS];
        for (int blk = 0; blk < BLOCKS; blk++)
            for (int w = 0; w < 2; w++) {
                MPI_Barrier(comm);
                double t0 = MPI_Wtime(), sum;
                for (int i = 0; i < iters; i++)
                    call(coll, w, g, comm, a, b, count);
                double dt = (MPI_Wtime() - t0) / iters;
                MPI_Allreduce(&dt, &sum, 1, MPI_DOUBLE, MPI_SUM, comm);
                t[w][blk] = sum / n * 1e6;
            }
        qsort(t[0], BLOCKS, sizeof(double), by_value);
        qsort(t[1], BLOCKS, sizeof(double), by_value);
        double raw = t[0][BLOCKS / 2], via = t[1][BLOCKS / 2];
        if (me == 0)
            printf("%8zu %9.2f %10.2f %6.3f %+8.2f\n", bytes, raw, via, via / raw, via - raw);
    }
    free(a);
    free(b);
    tether_group_free(g);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
