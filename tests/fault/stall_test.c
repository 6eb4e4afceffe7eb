/* tests/fault/stall_test.c - live ranks that never meet in one call, and ranks that wait for a
 * busy one. Run by `tether launch -n N --backend B`; the
 * bounds below count heartbeats of TETHER_HEARTBEAT (1 s by default; the plain build's ctest sets
 * 0.5 for the stall and deadlock cases, the sanitizer builds leave it: CI's TSan phase sets 2).
 *
 * Ranks that wait on each other (every one alive, answering heartbeats, which must never pass for
 * the waiting call's progress):
 *   reduce_recv   N = 2: rank 0 all-reduces while rank 1 receives from rank 0
 *   create_order  N = 2: tether_group_create with [0, 1] on rank 0 and [1, 0] on rank 1
 *   sub_parent    N = 3: rank 0 all-reduces on the group {0, 1} split off while ranks 1 and 2
 *                 all-reduce on the parent
 *   recv2         N = 2: rank 0 receives from rank 1 with tag 7, rank 1 from rank 0 with tag 3
 *   recv3         N = 3: rank r receives from rank r + 1 (mod 3) with tag r
 *   poll3         recv3, waited for with tether_waitsome in 20 ms slices until it ends (as the
 *                 torch binding's progress thread does; defaults only: it has no timeout)
 * With TETHER_DEADLOCK=0 and TETHER_TIMEOUT=5 every rank fails with TETHER_ETIMEDOUT within
 * 5 s + 2 heartbeats (the timeout is the only bound); with the defaults, with TETHER_EDEADLOCK
 * within 5 heartbeats, the message naming a cycle ("rank 0 waits for rank 1 in ...").
 *   swallow       N = 3: rank 1 passes a NULL buffer to all-reduce (TETHER_EINVAL), ignores it and
 *                 sleeps; ranks 0 and 2 fail within 5 heartbeats with TETHER_EPEER naming rank 1
 *                 and its error.
 * A rank busy outside tether for longer than any old timeout:
 *   idle_bcast    N = 3: rank 0 sleeps 40 s (40 heartbeats at the default, past the 25 s in
 *                 which the sockets' keepalive gives up on a silent peer), then broadcasts; ranks
 *                 1 and 2 wait in the broadcast all along and get rank 0's data.
 *
 * Each rank prints what it got and how long it took; a rank still waiting at its watchdog fails
 * the test. Usage: stall_test MODE */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tether.h"

#define TIMEOUT_S 5.0 /* TETHER_TIMEOUT, where the test's registration sets it */
#define SLACK_S 1.0   /* for a loaded machine */
#define IDLE_S 40     /* idle_bcast: rank 0's time outside tether */

static const char *const usage =
    "usage: stall_test reduce_recv|create_order|sub_parent|recv2|recv3|poll3|swallow|idle_bcast\n";

/* TETHER_HEARTBEAT as the library reads it: seconds, 1 when unset */
static double heartbeat_s(void)
{
    const char *v = getenv("TETHER_HEARTBEAT");
    double s = v ? strtod(v, NULL) : 0;
    return s > 0 ? s : 1.0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void watchdog(int sig)
{
    (void)sig;
    static const char msg[] = "stall_test: still waiting at the watchdog: the call never ended\n";
    ssize_t n = write(2, msg, sizeof msg - 1);
    (void)n;
    _exit(1);
}

/* A receive from src with tag, posted and waited for. */
static int recv_tagged(tether_group *g, float *x, int src, int tag)
{
    tether_request *req = NULL;
    int rc = tether_irecv(g, x, 1, TETHER_FLOAT32, src, tag, &req);
    return rc ? rc : tether_wait(req);
}

/* recv_tagged, waited for in slices of tether_waitsome, each of which must see the wait. */
static int recv_polled(tether_group *g, float *x, int src, int tag)
{
    tether_request *req = NULL;
    int rc = tether_irecv(g, x, 1, TETHER_FLOAT32, src, tag, &req);
    while (rc == TETHER_OK && req)
        rc = tether_waitsome(&req, 1, 20, NULL);
    return rc;
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
    if (!strcmp(mode, "recv2"))
        return recv_tagged(g, &x, 1 - rank, rank == 0 ? 7 : 3);
    if (!strcmp(mode, "recv3"))
        return recv_tagged(g, &x, (rank + 1) % 3, rank);
    if (!strcmp(mode, "poll3"))
        return recv_polled(g, &x, (rank + 1) % 3, rank);
    if (!strcmp(mode, "swallow"))
        return tether_all_reduce(g, &x, rank == 1 ? NULL : &x, 1, TETHER_FLOAT32, TETHER_SUM);
    fputs(usage, stderr);
    exit(2);
}

static int deadlock_off(void)
{
    return getenv("TETHER_DEADLOCK") && !strcmp(getenv("TETHER_DEADLOCK"), "0");
}

/* Seconds within which every rank of mode must have failed: the bound judge() holds it to. */
static double bound_s(const char *mode)
{
    if (deadlock_off() && strcmp(mode, "swallow") != 0)
        return TIMEOUT_S + 2 * heartbeat_s() + SLACK_S;
    return 5 * heartbeat_s() + SLACK_S;
}

/* What this rank must have got: NULL when it did. */
static const char *judge(const char *mode, int rank, int rc, const char *why, double took)
{
    if (!strcmp(mode, "swallow")) {
        if (rank == 1)
            return rc == TETHER_EINVAL ? NULL : "TETHER_EINVAL from its own NULL buffer";
        if (rc != TETHER_EPEER || !strstr(why, "rank 1 failed") || !strstr(why, "TETHER_EINVAL"))
            return "TETHER_EPEER naming rank 1 and its TETHER_EINVAL";
        return took <= bound_s(mode) ? NULL : "the failure within 5 heartbeats";
    }
    if (deadlock_off()) { /* the timeout alone, or a peer's report of its own */
        int timed_out =
            rc == TETHER_ETIMEDOUT || (rc == TETHER_EPEER && strstr(why, "TETHER_TIMEOUT") != NULL);
        if (!timed_out)
            return "TETHER_ETIMEDOUT (TETHER_DEADLOCK=0)";
        return took <= bound_s(mode) ? NULL : "the timeout within 5 s + 2 heartbeats";
    }
    if (rc != TETHER_EDEADLOCK || !strstr(why, "deadlock: rank "))
        return "TETHER_EDEADLOCK naming the cycle";
    return took <= bound_s(mode) ? NULL : "the deadlock within 5 heartbeats";
}

/* idle_bcast: rank 0 busy outside tether for IDLE_S, the others in the broadcast meanwhile. */
static int idle_bcast(tether_group *g, int rank)
{
    int data[4] = {0, 0, 0, 0};
    if (rank == 0) {
        sleep(IDLE_S);
        for (int i = 0; i < 4; i++)
            data[i] = 1000 + i;
    }
    double t0 = now_s();
    int rc = tether_broadcast(g, data, 4, TETHER_INT32, 0);
    printf("rank %d: idle_bcast: %s after %.1f s: %d %d %d %d\n", rank, tether_err_name(rc),
           now_s() - t0, data[0], data[1], data[2], data[3]);
    if (rc) {
        fprintf(stderr, "rank %d: %s\n", rank, tether_last_error());
        return 1;
    }
    for (int i = 0; i < 4; i++)
        if (data[i] != 1000 + i)
            return 1;
    return tether_barrier(g) != TETHER_OK;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *mode = argv[1];
    signal(SIGALRM, watchdog);
    alarm(!strcmp(mode, "idle_bcast") ? IDLE_S + 60 : 30 + (unsigned)(10 * heartbeat_s()));
    tether_group *g = NULL;
    int rc = tether_init(NULL, 1, &g);
    if (rc || (rc = tether_barrier(g))) {
        fprintf(stderr, "stall_test: init: %s: %s\n", tether_err_name(rc), tether_last_error());
        return 1;
    }
    int rank = tether_group_rank(g);
    if (!strcmp(mode, "idle_bcast")) {
        int bad = idle_bcast(g, rank);
        tether_group_free(g);
        return bad;
    }
    double t0 = now_s();
    rc = stalled_call(mode, g, rank);
    double took = now_s() - t0;
    const char *why = tether_last_error();
    printf("rank %d: %s: %s after %.2f s: %s\n", rank, mode, tether_err_name(rc), took, why);
    fflush(stdout);
    const char *expected = judge(mode, rank, rc, why, took);
    if (expected)
        fprintf(stderr, "rank %d: expected %s, got %s after %.2f s\n", rank, expected,
                tether_err_name(rc), took);
    /* leave only once the peers failed too (their bound, as judged): a normal close would fail
     * them with EPEER at once */
    double left = bound_s(mode) - took;
    if (left > 0)
        usleep((useconds_t)(left * 1e6));
    tether_group_free(g);
    return expected != NULL;
}
