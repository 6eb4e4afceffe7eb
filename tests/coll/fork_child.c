/* tests/coll/fork_child.c - a forked child must leave its parent's groups alone (issue 37, item 4).
 * Run under `tether launch -n N` (N >= 2).
 *
 * The last rank forks. The child finds that every call on the inherited world and on a group split
 * from it fails with TETHER_EINVAL naming the fork, frees both and exits normally (atexit handlers
 * and all). Then every rank, the parent included, runs all-reduces on both groups, which must be
 * right: before groups belonged to their process, the child's free shut the parent's connections
 * down and the next all-reduce failed with TETHER_EPEER on every rank. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tether.h"

#define COUNT 1000

static int rank;

static void fail(const char *what, int rc)
{
    fprintf(stderr, "rank %d (pid %d): %s -> %s: %s\n", rank, (int)getpid(), what,
            tether_err_name(rc), tether_last_error());
    exit(1);
}

/* One all-reduce of every rank's (rank + 1) * (i + 1) on g, checked. */
static void sum_checked(tether_group *g, const char *what)
{
    static int32_t x[COUNT];
    int me = tether_group_rank(g), n = tether_group_size(g);
    for (int i = 0; i < COUNT; i++)
        x[i] = (me + 1) * (i + 1);
    int rc = tether_all_reduce(g, x, x, COUNT, TETHER_INT32, TETHER_SUM);
    if (rc != TETHER_OK)
        fail(what, rc);
    for (int i = 0; i < COUNT; i++)
        if (x[i] != n * (n + 1) / 2 * (i + 1)) {
            fprintf(stderr, "rank %d: %s: element %d is %d, expected %d\n", rank, what, i, x[i],
                    n * (n + 1) / 2 * (i + 1));
            exit(1);
        }
}

/* In the child: a call on an inherited group must fail with TETHER_EINVAL naming the fork. */
static void expect_refused(int rc, const char *what)
{
    if (rc != TETHER_EINVAL || !strstr(tether_last_error(), "fork"))
        fail(what, rc);
}

static void child(tether_group *world, tether_group *half)
{
    int32_t x[COUNT] = {0};
    tether_group *sub = NULL;
    tether_request *req = NULL;
    expect_refused(tether_all_reduce(world, x, x, COUNT, TETHER_INT32, TETHER_SUM),
                   "all_reduce on the inherited world");
    expect_refused(tether_barrier(half), "barrier on the inherited split group");
    expect_refused(tether_group_split(world, 0, -1, &sub), "split of the inherited world");
    expect_refused(tether_isend(world, x, 1, TETHER_INT32, 0, 0, &req), "isend to rank 0");
    tether_group_free(half);
    tether_group_free(world);
    exit(0);
}

int main(void)
{
    tether_group *world = NULL, *half = NULL;
    int rc = tether_init("any", 1, &world);
    if (rc != TETHER_OK)
        fail("tether_init", rc);
    rank = tether_group_rank(world);
    int size = tether_group_size(world);
    if ((rc = tether_group_split(world, 0, -1, &half)) != TETHER_OK)
        fail("split", rc);
    sum_checked(world, "all_reduce before the fork");
    if (rank == size - 1) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0)
            child(world, half);
        int status = 0;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "rank %d: the forked child failed (status %#x)\n", rank, status);
            return 1;
        }
    }
    for (int i = 0; i < 3; i++) {
        sum_checked(world, "all_reduce on the world after the child exited");
        sum_checked(half, "all_reduce on the split group after the child exited");
    }
    if ((rc = tether_barrier(world)) != TETHER_OK)
        fail("barrier", rc);
    tether_group_free(half);
    tether_group_free(world);
    printf("rank %d: groups kept working after a forked child freed them\n", rank);
    return 0;
}
