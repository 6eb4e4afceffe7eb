/* examples/all_sum_latency.c - time of one 8-byte all_sum (one float64) through the C API.
 * The C side of python/bench/all_sum_overhead.py, which compares it with the Python layer.
 * Run: tether launch -n 2 -- build/examples/all_sum_latency [iterations]
 * Rank 0 prints "c_call us_per_call=<mean microseconds> iterations=<n>". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tether.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* iterations all-reduces of one float64, in place; returns the first failing status or 0. */
static int run(tether_group *g, long iterations)
{
    double x = 1.0;
    for (long i = 0; i < iterations; i++) {
        int rc = tether_all_reduce(g, &x, &x, 1, TETHER_FLOAT64, TETHER_SUM);
        if (rc != TETHER_OK)
            return rc;
    }
    return TETHER_OK;
}

int main(int argc, char **argv)
{
    long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
    if (iterations <= 0) {
        fprintf(stderr, "usage: %s [iterations > 0]\n", argv[0]);
        return 2;
    }
    tether_group *g = NULL;
    int rc = tether_init("any", 0, &g);
    if (rc != TETHER_OK) {
        fprintf(stderr, "tether_init: %s: %s\n", tether_err_name(rc), tether_last_error());
        return 1;
    }
    /* Warm up (connections, caches) with a tenth of the run, then start together. */
    rc = run(g, iterations / 10 + 1);
    if (rc == TETHER_OK)
        rc = tether_barrier(g);
    double start = now_us();
    if (rc == TETHER_OK)
        rc = run(g, iterations);
    double elapsed = now_us() - start;
    if (rc != TETHER_OK) {
        fprintf(stderr, "all_reduce: %s: %s\n", tether_err_name(rc), tether_last_error());
        tether_group_free(g);
        return 1;
    }
    if (tether_group_rank(g) == 0)
        printf("c_call us_per_call=%.3f iterations=%ld\n", elapsed / (double)iterations,
               iterations);
    tether_group_free(g);
    return 0;
}
