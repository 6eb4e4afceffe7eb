/* tests/fault/stall_test.c - live ranks that never meet in one call: TETHER_TIMEOUT ends it on
 * every rank. The peers stay alive all along and answer heartbeats, which prove them alive but must
 * not pass for the waiting call's progress (they did on mesh and ring: the call hung for ever). Run
 * by `tether launch -n N --backend B` with TETHER_TIMEOUT=5 and the default heartbeat of 1 s.
 *
 *   reduce_recv   N = 2: rank 0 all-reduces while rank 1 receives from rank 0
 *   create_order  N = 2: tether_group_create with [0, 1] on rank 0 and [1, 0] on rank 1
 *   sub_parent    N = 3: rank 0 all-reduces on the group {0, 1} split off while ranks 1 and 2
 *                 all-reduce on the parent
 *
 * Every rank must fail within 5 s + 2 heartbeats + 1 s of slack for a loaded machine, with
 * TETHER_ETIMEDOUT, or TETHER_EPEER from a peer that timed out first and said so; each prints how
 * long it took. A rank that never fails is stopped by its watchdog and fails the test.
 *
 * Usage: stall_test reduce_recv|create_order|sub_parent */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tether.h"

#define TIMEOUT_S 5.0                   /* TETHER_TIMEOUT, set by the test's registration */
#define LIMIT_S (TIMEOUT_S + 2.0 + 1.0) /* + 2 heartbeats of 1 s + slack */
#define WATCHDOG_S 30

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "stall_test: still waiting after the watchdog's 30 s: the call "
                              "never timed out\n";
    ssize_t n = write(2, msg, sizeof msg - 1);
    (void)n;
    _exit(1);
}

/* The call this rank makes: every one of them waits for a peer that is in another call. */
static int stalled_call(const char *mode, tether_group *g, int rank)
{
    float x = 1.0f;
    if (!strcmp(mode, "reduce_recv"))
        return rank == 0 ? tether_all_reduce(g, &x, &x, 1, TETHER_FLOAT32, TETHER_SUM)
                         : tether_recv(g, &x, 1, TETHER_FLOAT32, 0);
    if (!strcmp(mode, "create_order")) {
        static const int up[] = {0, 1}, down[] = {1, 0};
        tether_group *child = NULL;
        int rc = tether_group_create(g, rank == 0 ? up : down, 2, &child);
        tether_group_free(child);
        return rc;
    }
    if (!strcmp(mode, "sub_parent")) {
        tether_group *sub = NULL;
        int rc = tether_group_split(g, rank < 2 ? 0 : -1, rank, &sub);
        if (rc) { /* every rank calls the split: it must work */
            fprintf(stderr, "rank %d: split: %s: %s\n", rank, tether_err_name(rc),
                    tether_last_error());
            exit(1);
        }
        rc = rank == 0 ? tether_all_reduce(sub, &x, &x, 1, TETHER_FLOAT32, TETHER_SUM)
                       : tether_all_reduce(g, &x, &x, 1, TETHER_FLOAT32, TETHER_SUM);
        tether_group_free(sub);
        return rc;
    }
    fprintf(stderr, "usage: stall_test reduce_recv|create_order|sub_parent\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: stall_test reduce_recv|create_order|sub_parent\n");
        return 2;
    }
    signal(SIGALRM, watchdog);
    alarm(WATCHDOG_S);
    tether_group *g = NULL;
    int rc = tether_init(NULL, 1, &g);
    if (rc || (rc = tether_barrier(g))) {
        fprintf(stderr, "stall_test: init: %s: %s\n", tether_err_name(rc), tether_last_error());
        return 1;
    }
    int rank = tether_group_rank(g);
    double t0 = now_s();
    rc = stalled_call(argv[1], g, rank);
    double took = now_s() - t0;
    const char *why = tether_last_error();
    printf("rank %d: %s: %s after %.2f s: %s\n", rank, argv[1], tether_err_name(rc), took, why);
    fflush(stdout);
    /* a peer that timed out first breaks its endpoint and tells this one (EPEER, its words) */
    int timed_out =
        rc == TETHER_ETIMEDOUT || (rc == TETHER_EPEER && strstr(why, "TETHER_TIMEOUT") != NULL);
    int bad = !timed_out || took > LIMIT_S;
    if (bad)
        fprintf(stderr, "rank %d: expected TETHER_ETIMEDOUT within %.1f s, got %s after %.2f s\n",
                rank, LIMIT_S, tether_err_name(rc), took);
    /* leave only once the peers failed too: a normal close would fail them with EPEER at once */
    double left = LIMIT_S - took;
    if (left > 0)
        usleep((useconds_t)(left * 1e6));
    tether_group_free(g);
    return bad;
}
