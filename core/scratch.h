/* core/scratch.h - a group's cache of scratch blocks, kept from one collective to the next.
 *
 * Fresh memory costs a page fault per 4 KiB on first touch: a 4 MiB all-reduce that mallocs and
 * frees 2 MiB of receive slots per call spent more time faulting than moving bytes (measured:
 * docs/perf/notes.md, core/scratch.h). Like NCCL's persistent buffers or a caching allocator, a
 * group keeps the blocks its collectives used and hands them out again; they go back to the system
 * when the group is freed. A group runs one collective at a time (calls on one group are ordered by
 * contract), so the pool needs no lock. */
#ifndef TETHER_CORE_SCRATCH_H
#define TETHER_CORE_SCRATCH_H

#include <stddef.h>

/* Blocks one collective holds at once, at most (the ring pipeline, the deepest user, takes 7);
 * past that a block is a plain malloc, freed on release. */
#define TETHER__SCRATCH_SLOTS 8
/* A block larger than this goes back to the system on release rather than staying cached. */
#define TETHER__SCRATCH_KEEP_MAX ((size_t)256 << 20)

typedef struct tether__scratch_pool {
    struct {
        void *p;
        size_t cap;
        int busy;
    } slot[TETHER__SCRATCH_SLOTS];
} tether__scratch_pool;

/* A block of at least bytes (the smallest cached one that fits, else a new one); NULL when out of
 * memory. */
void *tether__pool_get(tether__scratch_pool *pool, size_t bytes);

/* Give p (from tether__pool_get, or NULL) back. */
void tether__pool_put(tether__scratch_pool *pool, void *p);

/* Free every cached block (the group is going away). */
void tether__pool_clear(tether__scratch_pool *pool);

#endif
