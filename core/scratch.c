/* core/scratch.c - a group's cache of scratch blocks (see scratch.h for why). */
#include <stdlib.h>

#include "scratch.h"

void *tether__pool_get(tether__scratch_pool *pool, size_t bytes)
{
    int fit = -1, spare = -1; /* the smallest free block that fits; a free slot to refill */
    if (bytes == 0)
        bytes = 1;
    for (int i = 0; i < TETHER__SCRATCH_SLOTS; i++) {
        if (pool->slot[i].busy)
            continue;
        size_t cap = pool->slot[i].cap;
        if (cap >= bytes && (fit < 0 || cap < pool->slot[fit].cap))
            fit = i;
        else if (cap < bytes && (spare < 0 || cap < pool->slot[spare].cap))
            spare = i; /* the smallest block that does not fit is the cheapest to give up */
    }
    if (fit >= 0) {
        pool->slot[fit].busy = 1;
        return pool->slot[fit].p;
    }
    if (spare < 0)
        return malloc(bytes); /* every slot busy: an uncached block */
    free(pool->slot[spare].p);
    pool->slot[spare].cap = 0;
    if (!(pool->slot[spare].p = malloc(bytes)))
        return NULL;
    pool->slot[spare].cap = bytes;
    pool->slot[spare].busy = 1;
    return pool->slot[spare].p;
}

void tether__pool_put(tether__scratch_pool *pool, void *p)
{
    if (!p)
        return;
    for (int i = 0; i < TETHER__SCRATCH_SLOTS; i++) {
        if (pool->slot[i].p != p)
            continue;
        pool->slot[i].busy = 0;
        if (pool->slot[i].cap > TETHER__SCRATCH_KEEP_MAX) {
            free(p);
            pool->slot[i].p = NULL;
            pool->slot[i].cap = 0;
        }
        return;
    }
    free(p); /* an uncached block */
}

void tether__pool_clear(tether__scratch_pool *pool)
{
    for (int i = 0; i < TETHER__SCRATCH_SLOTS; i++)
        free(pool->slot[i].p);
    *pool = (tether__scratch_pool){0};
}
