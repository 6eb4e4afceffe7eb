/* tests/coll/big_send.c - one large message from rank 0 to every other rank, words checked.
 * Run under `tether launch -n N`. Usage: big_send SIZE [--late] (SIZE: core/size_arg.h, "4G").
 *
 * Between ranks of one host the receiver copies the message out of the sender's memory
 * (backends/tcp/cma.h): gigabytes in one copy, which takes seconds. With a short TETHER_HEARTBEAT
 * both sides must keep hearing each other meanwhile, so neither breaks the group as a stopped peer.
 * Rank 0 sends to the others one after the other, so a rank waiting its turn watches the ranks
 * busy copying too. --late: the receivers wait in a barrier first, which copies the message out to
 * the heap so that rank 0's send can finish, and their receive then copies it from there. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/size_arg.h"
#include "tether.h"

/* Word i of the message: no two equal, so a word from the wrong place or a missing stripe shows. */
static uint64_t word(size_t i)
{
    return (uint64_t)i * 0x9e3779b97f4a7c15u + 1;
}

/* Whether word i of the n received is wrong, said on stderr. */
static int wrong(int rank, const uint64_t *buf, size_t i, size_t n)
{
    if (buf[i] == word(i))
        return 0;
    fprintf(stderr, "rank %d: word %zu of %zu is %llx, expected %llx\n", rank, i, n,
            (unsigned long long)buf[i], (unsigned long long)word(i));
    return 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int failed(int rank, const char *what, int rc)
{
    fprintf(stderr, "rank %d: %s: %s: %s\n", rank, what, tether_err_name(rc), tether_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    char err[TETHER__SIZE_ERR_MAX];
    size_t bytes;
    int late = argc == 3 && !strcmp(argv[2], "--late");
    if (argc < 2 || argc > 2 + late) {
        fprintf(stderr, "usage: big_send SIZE [--late]\n");
        return 2;
    }
    if (tether__size_parse("SIZE", argv[1], &bytes, err, sizeof err) < 0) {
        fprintf(stderr, "big_send: %s\n", err);
        return 2;
    }
    size_t n = bytes / sizeof(uint64_t);
    /* Touched before init: faulting in gigabytes slows a whole process, its heartbeat thread too
     * (a 0.2 s gap in 1 of 5 runs here at 4 GiB), and that is not what is tested. */
    uint64_t *buf = malloc(n * sizeof *buf);
    if (!buf) {
        fprintf(stderr, "big_send: out of memory for %zu bytes\n", bytes);
        return 1;
    }
    memset(buf, 0, n * sizeof *buf);
    tether_group *g;
    int rc = tether_init("any", 1, &g);
    if (rc)
        return failed(-1, "tether_init", rc);
    int rank = tether_group_rank(g), size = tether_group_size(g);
    double t0 = now_s();
    if (rank == 0) {
        for (size_t i = 0; i < n; i++)
            buf[i] = word(i);
        for (int p = 1; p < size && !rc; p++)
            rc = tether_send(g, buf, n, TETHER_UINT64, p);
        if (rc)
            return failed(rank, "tether_send", rc);
        if (late && (rc = tether_barrier(g)))
            return failed(rank, "tether_barrier", rc);
    } else {
        if (late && (rc = tether_barrier(g)))
            return failed(rank, "tether_barrier", rc);
        if ((rc = tether_recv(g, buf, n, TETHER_UINT64, 0)))
            return failed(rank, "tether_recv", rc);
        double t1 = now_s();
        /* every 509th word (a prime step: a word of every page, at shifting offsets) and the
         * last; checking every word took as long as the copy on a loaded machine */
        int bad = n > 0 && wrong(rank, buf, n - 1, n);
        for (size_t i = 0; i < n && !bad; i += 509)
            bad = wrong(rank, buf, i, n);
        if (bad)
            return 1;
        printf("rank %d: received %zu bytes from rank 0 in %.1f s (its fill included), checked\n",
               rank, bytes, t1 - t0);
    }
    if ((rc = tether_barrier(g)))
        return failed(rank, "tether_barrier", rc);
    free(buf);
    tether_group_free(g);
    return 0;
}
