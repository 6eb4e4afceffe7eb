/* examples/all_sum.c - the getting-started example: every rank adds its vector into everyone's.
 * Run: tether launch -n 4 -- build/examples/all_sum   (or alone: a group of size 1) */
#include <stdio.h>
#include <stdlib.h>

#include <tether.h>

int main(void)
{
    tether_group *g = NULL;
    int rc = tether_init("any", 0, &g);
    if (rc != TETHER_OK) {
        fprintf(stderr, "tether_init: %s: %s\n", tether_strerror(rc), tether_last_error());
        return 1;
    }
    int rank = tether_group_rank(g);
    float x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (float)(rank + 1) * (float)(i + 1);
    rc = tether_all_reduce(g, x, x, 4, TETHER_FLOAT32, TETHER_SUM);
    if (rc != TETHER_OK) {
        fprintf(stderr, "rank %d: all_reduce: %s: %s\n", rank, tether_strerror(rc),
                tether_last_error());
        tether_group_free(g);
        return 1;
    }
    printf("rank %d of %d (%s): sum = [%g, %g, %g, %g]\n", rank, tether_group_size(g),
           tether_group_backend(g), x[0], x[1], x[2], x[3]);
    tether_group_free(g);
    return 0;
}
