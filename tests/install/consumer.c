/* tests/install/consumer.c - a program outside the tree, built against the installed tether. */
#include <stdio.h>

#include <tether.h>

int main(void)
{
    tether_group *g = NULL;
    if (tether_init("singleton", 0, &g) != TETHER_OK)
        return 1;
    int x = 21, y = 0;
    int rc = tether_all_reduce(g, &x, &y, 1, TETHER_INT32, TETHER_SUM);
    printf("consumer: %s, size %d, sum %d\n", TETHER_VERSION_STRING, tether_group_size(g), y);
    tether_group_free(g);
    return rc == TETHER_OK && y == 21 ? 0 : 1;
}
