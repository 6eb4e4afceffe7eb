/* tests/mpi/mpi_errors.c - failures over the mpi backend, run under mpirun with 2 or more ranks.
 * Each mode makes one failure happen and checks every rank's code and message; exits 0 when each
 * rank saw what it should, 1 otherwise (printing what it got).
 *   mismatch   TETHER_MPI_CHECK=1: rank 0 reduces 4 elements, the others 5: EMISMATCH on every
 *              rank, and the group stays broken (the next call fails at once, same code)
 *   short      rank 0 sends 3 elements, rank 1 expects 5: EMISMATCH on rank 1 naming the count
 *   long       rank 0 sends 5 elements, rank 1 expects 3: EMISMATCH with MPI's truncation error
 *   noplugin   TETHER_MPI_PLUGIN names no file: a strict "any" fails with EUNAVAIL saying so,
 *              and a lenient one warns on stderr (a size-1 group per rank, never quietly) */
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

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "mismatch"))
        mismatch();
    else if (!strcmp(mode, "short"))
        p2p(3, 5, "sent 3 elements; this receive expects 5");
    else if (!strcmp(mode, "long"))
        p2p(5, 3, "MPI_Recv failed on rank 1 of");
    else if (!strcmp(mode, "noplugin"))
        noplugin();
    else {
        fprintf(stderr, "usage: mpi_errors mismatch|short|long|noplugin\n");
        return 2;
    }
    return failed;
}
