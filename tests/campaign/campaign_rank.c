/* tests/campaign/campaign_rank.c - one rank of a campaign run (tests/campaign/campaign.py): one
 * collective, dtype and size, repeated, every element of every rank checked against the exact
 * expected value.
 *
 * Usage: campaign_rank BACKEND COLLECTIVE DTYPE BYTES ITERS SEED
 *   COLLECTIVE: all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, p2p (each rank sends
 *   to the next and receives from the one before, non-blocking). BYTES is what each rank sends (for
 *   all_gather, reduce_scatter and all_to_all, per peer: BYTES / N); ITERS 0 = until an error.
 * Inputs are small integers (0..15, sum and max of 8 ranks fit int8 and are exact in every float),
 * different per rank, element, iteration and seed, so a stale, misplaced or corrupted chunk shows.
 * CAMPAIGN_KILL_MS=t: this rank SIGKILLs itself t ms after tether_init, saying when first.
 * CAMPAIGN_RUN_MS=t: repeat (ITERS ignored) until t ms have passed on rank 0, which tells the
 * others with a broadcast after each call, so that a cable's fault at a given time meets a call.
 * CAMPAIGN_TIMES=1: rank 0 prints "CALL <iteration> <start> <ms>" per call (start: ms since
 * tether_init), for tests that bound how much slower calls get after a fault (tests/netns).
 *
 * Prints one line: "OK", "WRONG <where>" (exit 1), or "FAILED <call> <error> at <ms>" (exit 2,
 * <ms> the wall clock in ms, so the driver can time it against the kill). */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "tether.h"

static int rank, size;
static unsigned long seed;

static long long wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Rank 0 says whether another call comes: it has not run for run_ms yet. */
static int go_on(tether_group *g, long long start, long run_ms, int *rc)
{
    int32_t more = wall_ms() - start < run_ms;
    *rc = tether_broadcast(g, &more, 1, TETHER_INT32, 0);
    return *rc == TETHER_OK && more;
}

/* Rank r's input at element i of iteration it. */
static int value(int r, size_t i, long it)
{
    return (int)(((unsigned long)r * 7 + i * 3 + (unsigned long)it * 5 + seed) % 16);
}

/* Element i of buf as an int, and an int into it: bench/values.c's conversions, exact for the
 * small values a run uses in every dtype it draws. */
static void put(void *buf, tether_dtype dt, size_t i, int v)
{
    bench_store(dt, buf, i, v);
}

static int get(const void *buf, tether_dtype dt, size_t i)
{
    double imag;
    return (int)bench_load(dt, buf, i, &imag);
}

static int sum_at(size_t i, long it)
{
    int s = 0;
    for (int r = 0; r < size; r++)
        s += value(r, i, it);
    return s;
}

static void *killer(void *arg)
{
    usleep((useconds_t)(*(long *)arg * 1000));
    printf("KILLED at %lld\n", wall_ms());
    fflush(stdout);
    kill(getpid(), SIGKILL);
    return NULL;
}

static tether_dtype dtype_of(const char *name)
{
    static const struct {
        const char *name;
        tether_dtype dt;
    } all[] = {{"int8", TETHER_INT8},      {"uint8", TETHER_UINT8},   {"int32", TETHER_INT32},
               {"int64", TETHER_INT64},    {"uint64", TETHER_UINT64}, {"float32", TETHER_FLOAT32},
               {"float64", TETHER_FLOAT64}};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        if (!strcmp(name, all[k].name))
            return all[k].dt;
    fprintf(stderr,
            "campaign_rank: dtype \"%s\": expected int8, uint8, int32, int64, uint64, "
            "float32 or float64\n",
            name);
    exit(3);
}

/* One call of coll on iteration it's inputs; returns the tether status, *n_out the result's length.
 */
static int run_once(tether_group *g, const char *coll, tether_dtype dt, size_t count, long it,
                    unsigned char *send, unsigned char *recv, size_t *n_out)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, rc;
    size_t n_in = count;
    if (!strcmp(coll, "reduce_scatter") || !strcmp(coll, "all_to_all"))
        n_in = count * (size_t)size;
    for (size_t i = 0; i < n_in; i++)
        put(send, dt, i, value(rank, i, it));
    *n_out =
        !strcmp(coll, "all_gather") || !strcmp(coll, "all_to_all") ? count * (size_t)size : count;
    memset(recv, 0xa5, *n_out * tether_dtype_size(dt)); /* stale bytes must not pass as data */
    if (!strcmp(coll, "all_reduce"))
        return tether_all_reduce(g, send, recv, count, dt, TETHER_SUM);
    if (!strcmp(coll, "all_gather"))
        return tether_all_gather(g, send, recv, count, dt);
    if (!strcmp(coll, "reduce_scatter"))
        return tether_reduce_scatter(g, send, recv, count, dt, TETHER_SUM);
    if (!strcmp(coll, "all_to_all"))
        return tether_all_to_all(g, send, recv, count, dt);
    if (!strcmp(coll, "broadcast")) {
        int root = (int)((seed + (unsigned long)it) % (unsigned long)size);
        if (rank == root)
            memcpy(recv, send, count * tether_dtype_size(dt));
        return tether_broadcast(g, recv, count, dt, root);
    }
    tether_request *reqs[2];
    if ((rc = tether_irecv(g, recv, count, dt, prev, 7, &reqs[0])) != TETHER_OK)
        return rc;
    if ((rc = tether_isend(g, send, count, dt, next, 7, &reqs[1])) != TETHER_OK)
        return rc;
    rc = tether_wait(reqs[0]);
    int rc2 = tether_wait(reqs[1]);
    return rc != TETHER_OK ? rc : rc2;
}

/* What element i of this rank's result must be. */
static int expected(const char *coll, size_t count, size_t i, long it)
{
    int root = (int)((seed + (unsigned long)it) % (unsigned long)size);
    if (!strcmp(coll, "all_reduce"))
        return sum_at(i, it);
    if (!strcmp(coll, "all_gather"))
        return value((int)(i / count), i % count, it);
    if (!strcmp(coll, "reduce_scatter"))
        return sum_at((size_t)rank * count + i, it);
    if (!strcmp(coll, "all_to_all"))
        return value((int)(i / count), (size_t)rank * count + i % count, it);
    if (!strcmp(coll, "broadcast"))
        return value(root, i, it);
    return value((rank + size - 1) % size, i, it);
}

int main(int argc, char **argv)
{
    static const char *const colls[] = {"all_reduce",     "broadcast",  "all_gather",
                                        "reduce_scatter", "all_to_all", "p2p"};
    tether_group *g;
    const char *kill_ms = getenv("CAMPAIGN_KILL_MS"), *run_ms = getenv("CAMPAIGN_RUN_MS");
    const char *times = getenv("CAMPAIGN_TIMES");
    long long start = wall_ms();
    size_t count, per, n_out;
    long iters, delay;
    int known = 0, rc;
    if (argc != 7) {
        fprintf(stderr, "usage: campaign_rank BACKEND COLLECTIVE DTYPE BYTES ITERS SEED\n");
        return 3;
    }
    for (size_t k = 0; k < sizeof colls / sizeof colls[0]; k++)
        known |= !strcmp(argv[2], colls[k]);
    if (!known) {
        fprintf(stderr,
                "campaign_rank: collective \"%s\": expected all_reduce, broadcast, "
                "all_gather, reduce_scatter, all_to_all or p2p\n",
                argv[2]);
        return 3;
    }
    tether_dtype dt = dtype_of(argv[3]);
    iters = strtol(argv[5], NULL, 10);
    seed = strtoul(argv[6], NULL, 10);
    if ((rc = tether_init(argv[1], 1, &g)) != TETHER_OK) {
        printf("FAILED tether_init %s at %lld: %s\n", tether_err_name(rc), wall_ms(),
               tether_last_error());
        return 2;
    }
    rank = tether_group_rank(g);
    size = tether_group_size(g);
    count = strtoull(argv[4], NULL, 10) / tether_dtype_size(dt);
    per = !strcmp(argv[2], "all_reduce") || !strcmp(argv[2], "broadcast") || !strcmp(argv[2], "p2p")
              ? 1
              : (size_t)size;
    count = count / per ? count / per : 1;
    unsigned char *send = malloc(count * (size_t)size * tether_dtype_size(dt));
    unsigned char *recv = malloc(count * (size_t)size * tether_dtype_size(dt));
    if (!send || !recv) {
        fprintf(stderr, "campaign_rank: out of memory\n");
        return 3;
    }
    if (kill_ms && *kill_ms) {
        pthread_t t;
        delay = strtol(kill_ms, NULL, 10);
        pthread_create(&t, NULL, killer, &delay);
    }
    if (run_ms && *run_ms)
        iters = 0;  /* until go_on says no */
    int status = 0; /* 0 OK, 1 WRONG, 2 FAILED: one line says which */
    long long init_ms = wall_ms();
    for (long it = 0; status == 0 && (iters == 0 || it < iters); it++) {
        long long call_ms = wall_ms();
        rc = run_once(g, argv[2], dt, count, it, send, recv, &n_out);
        if (rank == 0 && times && !strcmp(times, "1"))
            printf("CALL %ld %lld %lld\n", it, call_ms - init_ms, wall_ms() - call_ms);
        if (rc != TETHER_OK) {
            printf("FAILED %s %s at %lld: %s\n", argv[2], tether_err_name(rc), wall_ms(),
                   tether_last_error());
            status = 2;
            break;
        }
        for (size_t i = 0; status == 0 && i < n_out; i++) {
            int want = expected(argv[2], count, i, it), got = get(recv, dt, i);
            if (got != want) {
                printf("WRONG rank %d iteration %ld element %zu of %zu: %d, expected %d\n", rank,
                       it, i, n_out, got, want);
                status = 1;
            }
        }
        if (status == 0 && run_ms && *run_ms && !go_on(g, start, strtol(run_ms, NULL, 10), &rc)) {
            if (rc == TETHER_OK)
                break;
            printf("FAILED broadcast %s at %lld: %s\n", tether_err_name(rc), wall_ms(),
                   tether_last_error());
            status = 2;
        }
    }
    if (status == 0)
        printf("OK\n");
    /* the line out before anything else can end the process (a leak checker's report exits
     * without flushing stdio), then everything freed, a broken group too */
    fflush(stdout);
    free(send);
    free(recv);
    tether_group_free(g);
    return status;
}
