/* rdma_write.c - RC's rendezvous (large messages by RDMA WRITE) over the verbs emulator, run under
 * `tether launch` with TETHER_VERBOSE=1; rdma_write.sh judges the backend's counters at close.
 *
 * Usage: rdma_write big|late|mixed|fresh
 *   big    16 MiB float all-reduces, every element checked.
 *   late   rank 0 sends rank 1 a 1 MiB message that rank 1 receives only 300 ms later (its
 *          announcement arrives unexpected), then one the other way, received at once.
 *   mixed  all-reduces and sends around the threshold (256 KiB): just under, at, just over, odd.
 *   fresh  1,000 all-reduces of 2 MiB, each from and into buffers allocated for that call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tether.h"

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != TETHER_OK) {                                                                    \
            fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,                    \
                    tether_err_name(rc_), tether_last_error());                                    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* An all-reduce of count int32 from fresh buffers, every element checked (seed varies calls). */
static void all_reduce(tether_group *g, size_t count, int seed)
{
    int rank = tether_group_rank(g), n = tether_group_size(g);
    int32_t *v = malloc(count * sizeof *v), *out = malloc(count * sizeof *out);
    if (!v || !out)
        exit(2);
    for (size_t i = 0; i < count; i++)
        v[i] = rank * 7 + (int32_t)(i % 1013) + seed;
    CHECK(tether_all_reduce(g, v, out, count, TETHER_INT32, TETHER_SUM));
    for (size_t i = 0; i < count; i++)
        if (out[i] != 7 * n * (n - 1) / 2 + n * ((int32_t)(i % 1013) + seed)) {
            fprintf(stderr, "rank %d: %zu-element all-reduce, element %zu is %d: WRONG DATA\n",
                    rank, count, i, out[i]);
            exit(1);
        }
    free(v);
    free(out);
}

/* from sends to to count bytes; to waits delay_ms before receiving; checked. */
static void p2p(tether_group *g, int from, int to, size_t count, int delay_ms)
{
    int rank = tether_group_rank(g);
    unsigned char *b = malloc(count);
    if (!b)
        exit(2);
    if (rank == from) {
        for (size_t i = 0; i < count; i++)
            b[i] = (unsigned char)(i * 31 + (size_t)from);
        CHECK(tether_send(g, b, count, TETHER_UINT8, to));
    } else if (rank == to) {
        struct timespec ts = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        memset(b, 0, count);
        CHECK(tether_recv(g, b, count, TETHER_UINT8, from));
        for (size_t i = 0; i < count; i++)
            if (b[i] != (unsigned char)(i * 31 + (size_t)from)) {
                fprintf(stderr, "rank %d: byte %zu of %zu from rank %d is %u: WRONG DATA\n", rank,
                        i, count, from, b[i]);
                exit(1);
            }
    }
    free(b);
}

int main(int argc, char **argv)
{
    static const size_t around[] = {(256 << 10) - 4, 256 << 10, (256 << 10) + 4, 300001,
                                    (1 << 20) + 7};
    const char *mode = argc > 1 ? argv[1] : "";
    tether_group *g;
    CHECK(tether_init("rdma", 1, &g));
    if (!strcmp(mode, "big")) {
        for (int k = 0; k < 3; k++)
            all_reduce(g, (16 << 20) / 4, k);
    } else if (!strcmp(mode, "late")) {
        p2p(g, 0, 1, 1 << 20, 300);
        p2p(g, 1, 0, 1 << 20, 0);
    } else if (!strcmp(mode, "mixed")) {
        for (size_t k = 0; k < sizeof around / sizeof *around; k++) {
            all_reduce(g, around[k] / 4, (int)k);
            p2p(g, 0, 1, around[k], 0);
        }
    } else if (!strcmp(mode, "fresh")) {
        for (int k = 0; k < 1000; k++)
            all_reduce(g, (2 << 20) / 4, k % 17);
    } else {
        fprintf(stderr, "usage: rdma_write big|late|mixed|fresh\n");
        return 2;
    }
    CHECK(tether_barrier(g));
    tether_group_free(g);
    return 0;
}
