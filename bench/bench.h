/* bench/bench.h - `tether bench`: options, the measurement loop, and the value helpers --check
 * uses. */
#ifndef TETHER_BENCH_H
#define TETHER_BENCH_H

#include <stddef.h>

#include "tether.h"

enum { BENCH_MAX_BLOCKS = 64 };

typedef struct bench_opts {
    const char *coll; /* all_reduce, ..., send_recv, all */
    size_t min_bytes, max_bytes;
    int factor, warmup, iters;
    int blocks;     /* the timed iterations are split into this many blocks; the median is shown */
    double seconds; /* time budget per size */
    tether_dtype dt;
    tether_op op;
    int check, csv;
    int inplace;      /* all_reduce with send == recv */
    const char *json; /* NULL: no JSON file */
    int pair[2];      /* --pair A,B: send_recv from rank A to rank B only; {-1, -1}: the shift */
} bench_opts;

/* Run every size of every requested collective on g; rank 0 prints. *nwrong: wrong elements seen
 * with --check, summed over ranks. Returns 0, or 1 after printing the error. */
int bench_run(tether_group *g, const bench_opts *o, int *nwrong);

/* Element i of a buffer of dt as a double, and back (complex64: real part v, imaginary part 1). */
void bench_store(tether_dtype dt, void *buf, size_t i, double v);
double bench_load(tether_dtype dt, const void *buf, size_t i, double *imag);

#endif
