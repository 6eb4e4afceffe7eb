/* tests/mpi/mpi_cases.c - what the mpi backend does its own way, run under mpirun with 2 or more
 * ranks. Each mode checks every rank's codes, messages and elements; exits 0 when each rank saw
 * what it should, 1 otherwise (printing what it got).
 *   mismatch   TETHER_MPI_CHECK=1: rank 0 reduces 4 elements, the others 5: EMISMATCH on every
 *              rank, and the group stays broken (the next call fails at once, same code)
 *   short      rank 0 sends 3 elements, rank 1 expects 5: EMISMATCH on rank 1 naming the count
 *   long       rank 0 sends 5 elements, rank 1 expects 3: EMISMATCH with MPI's truncation error
 *   splitshort 3 ranks: ranks 1 and 2 split off, and there rank 0 (world rank 1) sends 3
 *              elements, rank 1 expects 5: the message names the sender by its world rank too
 *   noplugin   TETHER_MPI_PLUGIN names no file: a strict "any" fails with EUNAVAIL saying so,
 *              and a lenient one warns on stderr (a size-1 group per rank, never quietly)
 *   inplace    the in-place forms (all-reduce send == recv, all-gather send = this rank's block
 *              of recv, reduce-scatter recv = this rank's block of send), which MPI spells with
 *              MPI_IN_PLACE and its own layout, give the right elements on every rank */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tether.h"

static int failed;

static void expect(int rank, const char *what, int rc, int want, const char *text)
{
    const char *msg = tether_last_error();
    if (rc != want || (text && !strstr(msg, text))) {
        fprintf(stderr, "rank %d: %s: got %s (%s), expected %s with \"%s\"\n", rank, what,
                tether_err_name(rc), msg, tether_err_name(want), text ? text : "");
        failed = 1;
    } else {
        printf("rank %d: %s: %s: %s\n", rank, what, tether_err_name(rc), msg);
    }
}

static int init(tether_group **g)
{
    int rc = tether_init("any", 1, g);
    if (rc != TETHER_OK || strcmp(tether_group_backend(*g), "mpi") != 0) {
        fprintf(stderr, "tether_init: %s: %s\n", tether_err_name(rc), tether_last_error());
        exit(1);
    }
    return tether_group_rank(*g);
}

static void mismatch(void)
{
    tether_group *g;
    int rank = init(&g);
    float x[5] = {1, 2, 3, 4, 5};
    int rc = tether_all_reduce(g, x, x, rank == 0 ? 4 : 5, TETHER_FLOAT32, TETHER_SUM);
    expect(rank, "all_reduce of 4 against 5", rc, TETHER_EMISMATCH, "ranks called different");
    expect(rank, "the next call", tether_barrier(g), TETHER_EMISMATCH,
           "broken by an earlier failure");
    tether_group_free(g);
}

static void p2p(int sent, int expected, const char *text)
{
    tether_group *g;
    int rank = init(&g);
    int32_t buf[8] = {0};
    if (rank == 0)
        expect(rank, "send", tether_send(g, buf, (size_t)sent, TETHER_INT32, 1), TETHER_OK, NULL);
    else if (rank == 1)
        expect(rank, "recv", tether_recv(g, buf, (size_t)expected, TETHER_INT32, 0),
               TETHER_EMISMATCH, text);
    tether_group_free(g);
}

static void splitshort(void)
{
    tether_group *g, *c = NULL;
    int rank = init(&g);
    int32_t buf[8] = {0};
    expect(rank, "split", tether_group_split(g, rank > 0, rank, &c), TETHER_OK, NULL);
    if (rank == 1)
        expect(rank, "send", tether_send(c, buf, 3, TETHER_INT32, 1), TETHER_OK, NULL);
    else if (rank == 2)
        expect(rank, "recv", tether_recv(c, buf, 5, TETHER_INT32, 0), TETHER_EMISMATCH,
               "rank 0 of this group (world rank 1) sent 3 elements");
    tether_group_free(c);
    tether_group_free(g);
}

static void noplugin(void)
{
    tether_group *g = NULL;
    expect(-1, "strict init", tether_init("any", 1, &g), TETHER_EUNAVAIL, "no MPI plugin loads");
    if (tether_init("any", 0, &g) != TETHER_OK || tether_group_size(g) != 1) {
        fprintf(stderr, "lenient init did not give a group of one\n");
        failed = 1;
    }
    tether_group_free(g);
}

static void expect_elements(int rank, const char *what, const int32_t *got, const int32_t *want,
                            int n)
{
    for (int i = 0; i < n; i++)
        if (got[i] != want[i]) {
            fprintf(stderr, "rank %d: %s: element %d is %d, expected %d\n", rank, what, i, got[i],
                    want[i]);
            failed = 1;
            return;
        }
    printf("rank %d: %s: %d elements right\n", rank, what, n);
}

#define BLOCK 5
#define MAX_RANKS 8

static void inplace(void)
{
    tether_group *g;
    int rank = init(&g), n = tether_group_size(g);
    int32_t buf[BLOCK * MAX_RANKS], want[BLOCK * MAX_RANKS];
    if (n > MAX_RANKS) {
        fprintf(stderr, "inplace: at most %d ranks\n", MAX_RANKS);
        exit(2);
    }
    for (int i = 0; i < BLOCK; i++) { /* all-reduce: rank r holds r + i */
        buf[i] = rank + i;
        want[i] = n * (n - 1) / 2 + n * i;
    }
    expect(rank, "all_reduce in place",
           tether_all_reduce(g, buf, buf, BLOCK, TETHER_INT32, TETHER_SUM), TETHER_OK, NULL);
    expect_elements(rank, "all_reduce in place", buf, want, BLOCK);
    for (int r = 0; r < n; r++) /* all-gather: rank r's block holds 100 r + i */
        for (int i = 0; i < BLOCK; i++) {
            buf[r * BLOCK + i] = r == rank ? 100 * r + i : -1;
            want[r * BLOCK + i] = 100 * r + i;
        }
    expect(rank, "all_gather in place",
           tether_all_gather(g, buf + rank * BLOCK, buf, BLOCK, TETHER_INT32), TETHER_OK, NULL);
    expect_elements(rank, "all_gather in place", buf, want, BLOCK * n);
    for (int j = 0; j < n * BLOCK; j++) /* reduce-scatter: every rank sends j + rank */
        buf[j] = j + rank;
    for (int i = 0; i < BLOCK; i++)
        want[i] = n * (rank * BLOCK + i) + n * (n - 1) / 2;
    expect(rank, "reduce_scatter in place",
           tether_reduce_scatter(g, buf, buf + rank * BLOCK, BLOCK, TETHER_INT32, TETHER_SUM),
           TETHER_OK, NULL);
    expect_elements(rank, "reduce_scatter in place", buf + rank * BLOCK, want, BLOCK);
    expect(rank, "a partial overlap", /* refused by tether before MPI sees it */
           tether_all_reduce(g, buf, buf + 1, BLOCK, TETHER_INT32, TETHER_SUM), TETHER_EINVAL,
           "overlap");
    expect(rank, "the group after it", tether_barrier(g), TETHER_OK, NULL);
    tether_group_free(g);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "mismatch"))
        mismatch();
    else if (!strcmp(mode, "splitshort"))
        splitshort();
    else if (!strcmp(mode, "short"))
        p2p(3, 5, "sent 3 elements; this receive expects 5");
    else if (!strcmp(mode, "long"))
        p2p(5, 3, "MPI_Recv failed on rank 1 of");
    else if (!strcmp(mode, "noplugin"))
        noplugin();
    else if (!strcmp(mode, "inplace"))
        inplace();
    else {
        fprintf(stderr, "usage: mpi_cases mismatch|short|long|splitshort|noplugin|inplace\n");
        return 2;
    }
    return failed;
}
