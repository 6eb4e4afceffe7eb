/* core/coll.h - one collective call (its kind, buffers and algorithm) and what core/coll.c, the
 * public collective calls, offers the rest of core: its signature, a run in a backend of its own.
 */
#ifndef TETHER_CORE_COLL_H
#define TETHER_CORE_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "group.h"

typedef enum {
    TETHER__COLL_ALL_REDUCE,
    TETHER__COLL_ALL_GATHER,
    TETHER__COLL_REDUCE_SCATTER,
    TETHER__COLL_BROADCAST,
    TETHER__COLL_ALL_TO_ALL,
    TETHER__COLL_BARRIER,
    TETHER__COLL_SEND_RECV,
    TETHER__COLL_KIND_COUNT
} tether__coll_kind;

typedef enum {
    TETHER__ALGO_AUTO,
    TETHER__ALGO_RING,      /* bandwidth: reduce-scatter + all-gather round the ring, pipelined */
    TETHER__ALGO_TREE,      /* latency: recursive doubling / binomial tree */
    TETHER__ALGO_BUTTERFLY, /* recursive halving-doubling, non-power-of-two folded in */
    TETHER__ALGO_DIRECT,    /* every rank talks to every rank at once (full meshes) */
    TETHER__ALGO_NEIGHBOR,  /* small messages to ring neighbours only, both ways at once */
    TETHER__ALGO_COUNT
} tether__algo;

/* One collective call, already checked. Sizes in elements as in the API; esize = dtype size. */
typedef struct tether__coll {
    tether__coll_kind kind;
    const void *send;
    void *recv;   /* broadcast: the buffer */
    size_t count; /* all_reduce: count; all_gather: per rank; reduce_scatter: recv_count;
                     broadcast: count; all_to_all: per peer */
    tether_dtype dt;
    tether_op op;
    int root;
    size_t esize;
    tether__algo algo; /* set by tether__algo_choose, never AUTO when an algorithm runs */
    int wire_bf16;     /* float32 payload travels as bfloat16 (TETHER_WIRE_DTYPE=bf16) */
    int sending;       /* SEND_RECV: 1 for tether_send, 0 for tether_recv */
    int *source;       /* SEND_RECV receive: where the sender's group rank goes (root may be
                          TETHER_ANY_SOURCE), or NULL */
} tether__coll;

/* The hash of every field of c that ranks must agree on; the transport compares it on every
 * message (TETHER_EMISMATCH). */
uint32_t tether__signature(const tether__coll *c);

/* Run c whole in a backend that brings its own calls (ops->run: MPI); breaks g on failure. */
int tether__run_in_backend(tether_group *g, const tether__coll *c, const char *name);

/* tether_all_gather, named in failure messages as name: the library's own calls (group.c) say
 * what the user called, not a collective the user never made. */
int tether__all_gather_as(tether_group *g, const void *send, void *recv, size_t count,
                          tether_dtype dt, const char *name);

#endif
