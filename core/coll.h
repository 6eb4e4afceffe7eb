/* core/coll.h - what every algorithm in core/algo sees: the call, and messages to group ranks. */
#ifndef TETHER_CORE_COLL_H
#define TETHER_CORE_COLL_H

#include <stddef.h>
#include <stdint.h>

#include "group.h"

typedef enum {
    TETHER_COLL_ALL_REDUCE,
    TETHER_COLL_ALL_GATHER,
    TETHER_COLL_REDUCE_SCATTER,
    TETHER_COLL_BROADCAST,
    TETHER_COLL_ALL_TO_ALL,
    TETHER_COLL_BARRIER,
    TETHER_COLL_SEND_RECV,
    TETHER_COLL_KIND_COUNT
} tether_coll_kind;

typedef enum {
    TETHER_ALGO_AUTO,
    TETHER_ALGO_RING,      /* bandwidth: reduce-scatter + all-gather round the ring, pipelined */
    TETHER_ALGO_TREE,      /* latency: recursive doubling / binomial tree */
    TETHER_ALGO_BUTTERFLY, /* recursive halving-doubling, non-power-of-two folded in */
    TETHER_ALGO_DIRECT,    /* every rank talks to every rank at once (full meshes) */
    TETHER_ALGO_NEIGHBOR,  /* small messages to ring neighbours only, both ways at once */
    TETHER_ALGO_COUNT
} tether_algo;

/* One collective call, already checked. Sizes in elements as in the API; esize = dtype size. */
typedef struct tether_coll {
    tether_coll_kind kind;
    const void *send;
    void *recv;   /* broadcast: the buffer */
    size_t count; /* all_reduce: count; all_gather: per rank; reduce_scatter: recv_count;
                     broadcast: count; all_to_all: per peer */
    tether_dtype dt;
    tether_op op;
    int root;
    size_t esize;
    tether_algo algo; /* set by tether__algo_choose, never AUTO when an algorithm runs */
    int wire_bf16;    /* float32 payload travels as bfloat16 (TETHER_WIRE_DTYPE=bf16) */
    int sending;      /* SEND_RECV: 1 for tether_send, 0 for tether_recv */
    int *source;      /* SEND_RECV receive: where the sender's group rank goes (root may be
                         TETHER_ANY_SOURCE), or NULL */
} tether_coll;

/* The hash of every field of c that ranks must agree on; the transport compares it on every
 * message (TETHER_EMISMATCH). */
uint32_t tether__signature(const tether_coll *c);

/* Run c whole in a backend that brings its own calls (ops->run: MPI); breaks g on failure. */
int tether__run_in_backend(tether_group *g, const tether_coll *c, const char *name);

/* Messages between group ranks, tagged with the running collective and step. Errors are sticky
 * on the world and already recorded. */
int tether__isend(tether_group *g, int peer, const void *buf, size_t bytes, uint32_t step,
                  tether_req **out);
int tether__irecv(tether_group *g, int peer, void *buf, size_t bytes, uint32_t step,
                  tether_req **out);

/* Wait for n requests (NULL entries are skipped and set to NULL when done). Spins briefly and
 * adaptively, then sleeps in the transport's wait; no progress for TETHER_TIMEOUT -> ETIMEDOUT. */
int tether__waitall(tether_group *g, tether_req **reqs, int n);

/* Test n requests once without waiting (NULL entries skipped, set to NULL when done): how many are
 * still pending, or < 0 (the error, recorded); *progress set when one completed. */
int tether__testall(tether_group *g, tether_req **reqs, int n, int *progress);

/* The same wait over what test says: called once a round, it makes what progress it can without
 * blocking and returns how much is still pending (0: done; < 0: the error, recorded), setting
 * *progress when something completed or moved on (which resets the TETHER_TIMEOUT clock). For a
 * wait whose requests are not all posted yet (an any-source receive, core/p2p.c). */
typedef int (*tether__tester)(void *arg, int *progress);
int tether__wait_until(tether_group *g, tether__tester test, void *arg);
/* One sleep of a wait that polls in slices (tether_waitsome, whose caller decides when to stop):
 * up to ms in g's current call (g->cur_*), then whether it can still end, as tether__wait_until
 * asks after a period without progress: the peers answer heartbeats, and the ranks it waits on
 * can go on (TETHER_EDEADLOCK, TETHER_EPEER: core/waitstate.h). The heartbeats say this rank waits
 * from its first slice (*began set) until the caller's tether__ws_wait_end, with the g->cur_peer
 * of that slice. */
int tether__wait_slice(tether_group *g, int ms, int *began);

/* Send to one peer and receive from another (or the same) at once, then wait for both. */
int tether__sendrecv(tether_group *g, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                     size_t rbytes, uint32_t step);

/* The one place a call's algorithm is chosen (core/algo/select.c): from TETHER_ALLREDUCE_ALGO,
 * TETHER_TREE_BELOW (parsed again only when their text changed since this thread's last call),
 * the size and the transport's caps, into c->algo. A malformed setting the call uses is
 * TETHER_ECONFIG naming the variable and the values it accepts, before anything is sent. */
int tether__algo_choose(const tether_group *g, tether_coll *c);
const char *tether__algo_name(tether_algo a);
/* Parse "auto|ring|tree|butterfly|direct|neighbor"; -1 if unknown. */
int tether__algo_parse(const char *s);
/* TETHER_ECONFIG naming the variable when TETHER_ALLREDUCE_ALGO or TETHER_TREE_BELOW is malformed
 * (tether_init checks both, so a job set up wrong fails before it forms), else TETHER_OK. */
int tether__algo_settings_check(void);

/* The algorithms, one file each in core/algo. Each runs c on g with g->size >= 2. */
int tether__allreduce_ring(tether_group *g, const tether_coll *c);
int tether__allreduce_tree(tether_group *g, const tether_coll *c);
int tether__allreduce_butterfly(tether_group *g, const tether_coll *c);
int tether__allreduce_direct(tether_group *g, const tether_coll *c);
int tether__allreduce_neighbor(tether_group *g, const tether_coll *c);
int tether__allgather_ring(tether_group *g, const tether_coll *c);
int tether__allgather_direct(tether_group *g, const tether_coll *c);
int tether__allgather_neighbor(tether_group *g, const tether_coll *c);
int tether__reducescatter_ring(tether_group *g, const tether_coll *c);
int tether__reducescatter_direct(tether_group *g, const tether_coll *c);
int tether__broadcast_tree(tether_group *g, const tether_coll *c);
int tether__broadcast_ring(tether_group *g, const tether_coll *c);
int tether__broadcast_neighbor(tether_group *g, const tether_coll *c);
int tether__alltoall_direct(tether_group *g, const tether_coll *c);
int tether__barrier_dissemination(tether_group *g, const tether_coll *c);
int tether__barrier_neighbor(tether_group *g, const tether_coll *c);

/* Run a checked collective whose algorithm is chosen on a group of size >= 2: call it. */
int tether__coll_run(tether_group *g, const tether_coll *c);

/* tether_all_gather, named in failure messages as name: the library's own calls (group.c) say
 * what the user called, not a collective the user never made. */
int tether__all_gather_as(tether_group *g, const void *send, void *recv, size_t count,
                          tether_dtype dt, const char *name);

#endif
