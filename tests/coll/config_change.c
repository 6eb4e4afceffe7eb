/* tests/coll/config_change.c - algorithm settings changed while a group runs (issue 25, item 3).
 * Run under `tether launch -n N` (N >= 2).
 *
 * Default: on every rank a malformed TETHER_ALLREDUCE_ALGO, then TETHER_TREE_BELOW, fails the call
 * that uses it with TETHER_ECONFIG naming the variable and what it accepts, before anything is
 * sent; once unset the same group's all-reduce and broadcast are right, and so is every algorithm
 * set between calls. Then the last rank alone has the malformed value: its call fails, it unsets
 * it and retries, and that retry is the call the other ranks wait in (correct sums everywhere).
 *
 * --gives-up: the last rank alone has it and, failing, frees the group and exits; every other rank
 * must get TETHER_EPEER naming that rank within seconds, not hang until TETHER_TIMEOUT.
 *
 * --disagree: the last rank alone forces a valid algorithm the others do not take (ring, where they
 * take the tree): the algorithm is part of the call's signature, so every rank must get
 * TETHER_EMISMATCH within seconds, not wrong sums. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tether.h"

#define COUNT 1000 /* elements: small, so auto takes the tree; forced algorithms cover the rest */
#define GIVE_UP_WITHIN_S 10.0

static int rank, size;

static void fail(const char *what, int rc)
{
    fprintf(stderr, "rank %d: %s -> %s: %s\n", rank, what, tether_err_name(rc),
            tether_last_error());
    exit(1);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One all-reduce of every rank's (rank + 1) * (i + 1), checked: the sum is n(n+1)/2 * (i + 1). */
static void sum_checked(tether_group *g, const char *what)
{
    static int32_t x[COUNT];
    for (int i = 0; i < COUNT; i++)
        x[i] = (rank + 1) * (i + 1);
    int rc = tether_all_reduce(g, x, x, COUNT, TETHER_INT32, TETHER_SUM);
    if (rc != TETHER_OK)
        fail(what, rc);
    for (int i = 0; i < COUNT; i++)
        if (x[i] != size * (size + 1) / 2 * (i + 1)) {
            fprintf(stderr, "rank %d: %s: element %d is %d, expected %d\n", rank, what, i, x[i],
                    size * (size + 1) / 2 * (i + 1));
            exit(1);
        }
}

/* A call that must fail with TETHER_ECONFIG whose message names var and each word of accepts. */
static void expect_econfig(int rc, const char *what, const char *var, const char *const *accepts)
{
    const char *msg = tether_last_error();
    if (rc != TETHER_ECONFIG || !strstr(msg, var))
        fail(what, rc);
    for (; *accepts; accepts++)
        if (!strstr(msg, *accepts)) {
            fprintf(stderr, "rank %d: %s: the message does not say %s is accepted: %s\n", rank,
                    what, *accepts, msg);
            exit(1);
        }
}

static int bogus_all_reduce(tether_group *g)
{
    static const char *const algos[] = {"auto",   "ring",     "tree", "butterfly",
                                        "direct", "neighbor", NULL};
    int32_t x[COUNT] = {0};
    setenv("TETHER_ALLREDUCE_ALGO", "bogus", 1);
    int rc = tether_all_reduce(g, x, x, COUNT, TETHER_INT32, TETHER_SUM);
    expect_econfig(rc, "all_reduce with TETHER_ALLREDUCE_ALGO=bogus",
                   "TETHER_ALLREDUCE_ALGO=\"bogus\"", algos);
    unsetenv("TETHER_ALLREDUCE_ALGO");
    return rc;
}

static void every_rank(tether_group *g)
{
    static const char *const bytes[] = {"bytes", NULL};
    bogus_all_reduce(g);
    sum_checked(g, "all_reduce after unsetting TETHER_ALLREDUCE_ALGO");

    int32_t b[COUNT];
    setenv("TETHER_TREE_BELOW", "lots", 1);
    expect_econfig(tether_broadcast(g, b, COUNT, TETHER_INT32, 0), "broadcast with TREE_BELOW=lots",
                   "TETHER_TREE_BELOW=\"lots\"", bytes);
    expect_econfig(tether_all_reduce(g, b, b, COUNT, TETHER_INT32, TETHER_SUM),
                   "all_reduce with TREE_BELOW=lots", "TETHER_TREE_BELOW=\"lots\"", bytes);
    unsetenv("TETHER_TREE_BELOW");
    for (int i = 0; i < COUNT; i++)
        b[i] = rank == 0 ? i : -1;
    int rc = tether_broadcast(g, b, COUNT, TETHER_INT32, 0);
    if (rc != TETHER_OK)
        fail("broadcast after unsetting TETHER_TREE_BELOW", rc);
    for (int i = 0; i < COUNT; i++)
        if (b[i] != i)
            fail("broadcast after unsetting TETHER_TREE_BELOW: wrong data", TETHER_OK);

    static const char *const valid[] = {"ring", "tree", "butterfly", "direct", "neighbor", "auto"};
    for (size_t a = 0; a < sizeof valid / sizeof valid[0]; a++) {
        setenv("TETHER_ALLREDUCE_ALGO", valid[a], 1);
        sum_checked(g, valid[a]);
    }
    unsetenv("TETHER_ALLREDUCE_ALGO");
}

/* The last rank alone: it fails, fixes its setting and calls again, joining the others' call. */
static void one_rank_retries(tether_group *g)
{
    if (rank == size - 1)
        bogus_all_reduce(g);
    sum_checked(g, "all_reduce that the last rank retried");
    sum_checked(g, "the next all_reduce");
}

/* An all-reduce that must fail with want, naming the last rank, within seconds. */
static void expect_failure_soon(tether_group *g, int want, const char *after)
{
    int32_t x[COUNT] = {0};
    double t0 = now_s();
    int rc = tether_all_reduce(g, x, x, COUNT, TETHER_INT32, TETHER_SUM);
    double took = now_s() - t0;
    char peer[32];
    snprintf(peer, sizeof peer, "rank %d", size - 1);
    if (rc != want || took > GIVE_UP_WITHIN_S || !strstr(tether_last_error(), peer)) {
        fprintf(stderr, "rank %d: after %s, all_reduce -> %s after %.1f s (expected %s): %s\n",
                rank, after, tether_err_name(rc), took, tether_err_name(want), tether_last_error());
        exit(1);
    }
    printf("rank %d: %s after %.1f s: %s\n", rank, tether_err_name(rc), took, tether_last_error());
}

/* The last rank alone: it fails and gives up; the others must hear of it within seconds. */
static void one_rank_gives_up(tether_group *g)
{
    if (rank == size - 1)
        bogus_all_reduce(g);
    else
        expect_failure_soon(g, TETHER_EPEER, "the last rank gave up");
}

/* The last rank alone forces the ring; the others take the tree for so small a vector. */
static void one_rank_disagrees(tether_group *g)
{
    if (rank == size - 1)
        setenv("TETHER_ALLREDUCE_ALGO", "ring", 1);
    expect_failure_soon(g, TETHER_EMISMATCH, "the last rank forced the ring");
}

int main(int argc, char **argv)
{
    int gives_up = argc == 2 && !strcmp(argv[1], "--gives-up");
    int disagree = argc == 2 && !strcmp(argv[1], "--disagree");
    if (argc > 2 || (argc == 2 && !gives_up && !disagree)) {
        fprintf(stderr, "usage: config_change [--gives-up | --disagree]\n");
        return 2;
    }
    tether_group *g = NULL;
    int rc = tether_init("any", 1, &g);
    if (rc != TETHER_OK)
        fail("tether_init", rc);
    rank = tether_group_rank(g);
    size = tether_group_size(g);
    if (gives_up || disagree) {
        (gives_up ? one_rank_gives_up : one_rank_disagrees)(g);
        tether_group_free(g);
        return 0;
    }
    every_rank(g);
    one_rank_retries(g);
    rc = tether_barrier(g);
    if (rc != TETHER_OK)
        fail("barrier", rc);
    if (rank == 0)
        printf("config_change: %d ranks over %s: all checks passed\n", size,
               tether_group_backend(g));
    tether_group_free(g);
    return 0;
}
