/* core/algo/algo.h - what the algorithms of core/algo share: spans, partitions, scratch memory, the
 * wire format (the dtype itself, or bfloat16 for float32 all-reduce) and the two reusable engines
 * (the pipelined ring, the direct reduce-scatter and all-gather). */
#ifndef TETHER_CORE_ALGO_H
#define TETHER_CORE_ALGO_H

#include <stddef.h>

#include "core/coll.h"
#include "core/wait.h"

/* Segment of the pipelines that pass data on (the ring, the broadcast chain): every segment costs
 * a wait and a hand-over on each rank it crosses, which on hosts whose ranks share cores outweighed
 * the overlap that smaller ones give (measured: docs/perf/notes.md, core/algo/algo.h). */
#define TETHER__SEG_BYTES ((size_t)1024 * 1024)
/* Segment of the direct reduce-scatter, whose segments cross one hop only: there 256 KiB ran
 * faster than 1 MiB (measured: docs/perf/notes.md, core/algo/algo.h). */
#define TETHER__DIRECT_SEG_BYTES ((size_t)256 * 1024)
/* Segments in flight per direction: receives posted ahead of the one being reduced (the ring
 * posts a whole step's segments ahead when there are more, see ring_pipeline.c). */
#define TETHER__WINDOW 4
/* Most segments a chunk is cut into: beyond, segments grow, so a huge vector does not mean
 * thousands of requests in flight. */
#define TETHER__MAX_SEGS 64
/* Auto choice: below this many bytes all-reduce uses the latency algorithm (TETHER_TREE_BELOW). */
#define TETHER__TREE_BELOW_DEFAULT ((size_t)32 * 1024)
/* ... and below this many on a full mesh of up to 4 ranks of one host (TETHER__CAP_ONE_HOST): there
 * links are copies on shared cores, a round costs wake-ups more than bytes, and recursive doubling
 * took 0.5 to 0.9 of the direct algorithm's time from 32 to 128 KiB at N = 2, 3 and 4, and was
 * level or ahead up to 256 KiB (through the sockets; measured: docs/perf/notes.md,
 * core/algo/algo.h). */
#define TETHER__ONE_HOST_TREE_BELOW ((size_t)256 * 1024)
#define TETHER__ONE_HOST_TREE_MAX_RANKS 4
/* Auto choice with 2 or 4 ranks all on one host: from the latency threshold up to (not including)
 * this many bytes all-reduce takes recursive halving-doubling (butterfly), not the direct
 * algorithm or the ring: one peer per step keeps each rank's copies to one stream at a time on
 * the shared cores. Reading memory (the default there from 256 KiB) it took 0.84-0.92 of the
 * direct algorithm's time from 256 KiB (N = 4) or 1 MiB (N = 2) to 8 MiB, through the sockets
 * level to 0.85, and no longer won at 16 MiB. Full meshes only: a ring rank cannot tell whether
 * the ranks beyond its neighbours share its host, so ranks could choose differently (forced, on
 * the ring backend's 4 ranks of one host, where its partners are neighbours, it took 0.57-0.97 of
 * the ring's time from 128 KiB to 4 MiB). At N = 3, where it must fold a rank in and out, it lost
 * at 4 MiB through the sockets, so 3 ranks keep the direct algorithm and the ring band (measured:
 * docs/perf/notes.md, core/algo/algo.h). */
#define TETHER__ONE_HOST_BUTTERFLY_MAX ((size_t)16 << 20)
/* Auto choice on a full mesh of 3 or more ranks all on this host with the shared-memory rings on
 * (TETHER__CAP_MEMORY_RINGS): an all-reduce of at most this many bytes takes the direct
 * algorithm's one step (every vector to every rank, reduced in rank order), not recursive doubling:
 * a message in a ring costs no system call, so one round of n - 1 of them beats log2(n) rounds of
 * one. On 2 shared CPUs, 8 B: N = 3 2.7-3.2 against 3.9-4.2 us, N = 4 3.2-4.2 against 4.3-5.1,
 * N = 5, 6, 8 0.75-0.85 of the tree's time; 512 B level or ahead; 4 KiB behind from N = 6 (n - 1
 * vectors out per rank; measured: docs/perf/notes.md, core/algo/algo.h). */
#define TETHER__RINGS_ONE_STEP_MAX ((size_t)512)
/* Auto choice where only ring neighbours are linked: below this many bytes broadcast uses the
 * neighbour algorithm, the chain above (an explicit TETHER_TREE_BELOW sets both). */
#define TETHER__BCAST_TREE_BELOW_DEFAULT ((size_t)2 * 1024 * 1024)
/* Auto choice on a full mesh whose peers read each other's memory: from this many bytes (the
 * default TETHER_TCP_CMA_MIN, where reading starts) broadcast uses the binomial tree, whose
 * readers copy whole buffers; below it, and through sockets at every size, the chain wins
 * (core/algo/select.c, docs/perf/notes.md). */
#define TETHER__BCAST_MEMORY_TREE_MIN ((size_t)256 * 1024)
/* Auto choice with every rank on one host (TETHER__CAP_ONE_HOST), 3 or more of them and not the
 * butterfly's 4 (TETHER__ONE_HOST_BUTTERFLY_MAX): from
 * TETHER__ONE_HOST_RING_MIN up to (not including) TETHER__ONE_HOST_RING_MAX bytes all-reduce takes
 * the ring, not the direct algorithm: there the direct algorithm's n - 1 streams per rank at once
 * outgrow the caches the ranks share. The margin shrank once links of one host opened their
 * receive windows (socket.c), and the all-gather and all-to-all counterparts of this rule lost at
 * every size then and were dropped (measured: docs/perf/notes.md, core/algo/algo.h). Ranks on
 * separate hosts keep the direct algorithm, which uses every cable. */
#define TETHER__ONE_HOST_RING_MIN ((size_t)2 << 20)
#define TETHER__ONE_HOST_RING_MAX ((size_t)8 << 20)
/* Auto choice where only ring neighbours are linked: an all-gather whose whole result is at most
 * this many bytes takes the neighbour algorithm (whole blocks, n / 2 steps), the ring above: at
 * N = 4 and 5 the neighbour algorithm took half to two thirds of the ring's time up to this size,
 * the largest measured (measured: docs/perf/notes.md, core/algo/algo.h). */
#define TETHER__NEIGHBOR_GATHER_MAX ((size_t)256 * 1024)
/* Auto choice on a full mesh of a power of two ranks, 4 or more, whose messages go through sockets:
 * an all-gather whose whole result is at most this many bytes takes recursive doubling (log2(n)
 * rounds, one message each way per rank), the direct algorithm above (core/algo/select.c). On
 * loopback doubling still won at 256 KiB, but there every link is the same memory; separate
 * cables (a Thunderbolt mesh) carry the direct algorithm's n - 1 blocks at once, so the bound stays
 * where the latency dominates. */
#define TETHER__DOUBLING_GATHER_MAX ((size_t)64 * 1024)
/* Auto choice where only ring neighbours are linked: below this many bytes all-reduce takes the
 * neighbour algorithm, the ring from here (unless TETHER_TREE_BELOW says otherwise). The
 * neighbour algorithm sends n - 1 vectors per rank against the ring's 2(n - 1)/n, but in
 * ceil((n - 1) / 2) steps against 2(n - 1): on loopback it took 0.35 to 0.7 of the ring's time from
 * 32 to 64 KiB at N = 4, 6 and 8, and 0.74 (N = 4) to level (N = 6, 8) at 128 KiB. On links of
 * about 1 Gbit/s the bytes weigh more and the crossing comes near TETHER__TREE_BELOW_DEFAULT
 * instead (measured and worked out: docs/perf/notes.md, core/algo/algo.h). */
#define TETHER__NEIGHBOR_BELOW ((size_t)128 * 1024)
/* Auto choice: direct algorithms on a full mesh up to this many ranks (one message per peer at
 * once); beyond, the ring keeps the number of concurrent transfers per rank at two. */
#define TETHER__DIRECT_MAX_RANKS 8

/* A piece of the collective's vector, in elements: where its input is read (src, NULL when the
 * algorithm never reads it), where its result goes (dst), its length, and (direct algorithms) its
 * element offset in the whole vector, which places its bfloat16 copy in a staging buffer. */
typedef struct tether__span {
    const char *src;
    char *dst;
    size_t len;
    size_t off;
} tether__span;

/* Part idx of total cut into parts pieces as evenly as possible: the first total % parts pieces
 * get one element more. Every rank computes the same cuts, so sender and receiver agree. */
static inline void tether__part(size_t total, size_t parts, size_t idx, size_t *off, size_t *len)
{
    size_t base = total / parts, extra = total % parts;
    *off = idx * base + (idx < extra ? idx : extra);
    *len = base + (idx < extra);
}

/* base + bytes, keeping NULL: an empty user buffer may be NULL, and arithmetic on NULL is
 * undefined. */
static inline char *tether__at(const void *base, size_t bytes)
{
    return base ? (char *)base + bytes : NULL;
}

/* (a mod n) for a possibly negative a. */
static inline int tether__mod(int a, int n)
{
    if (a >= 0 && a < n)
        return a;
    if (a < 0 && a >= -n) /* a rank less another: no division, which costs a small call tens of
                             cycles a time (docs/perf/notes.md, core/algo/algo.h) */
        return a + n;
    if (a >= n && a < 2 * n) /* a rank plus another */
        return a - n;
    return ((a % n) + n) % n;
}

/* Segments needed so none is over seg_bytes (at most TETHER__MAX_SEGS, larger then): at least 1, so
 * an empty vector still exchanges (empty) messages and a rank that passed another count gets
 * TETHER_EMISMATCH, not a hang. */
size_t tether__nsegments(size_t elems, size_t esize, size_t seg_bytes);

/* A block from g's scratch pool (core/scratch.h) that records TETHER_ENOMEM naming what it was
 * for; NULL on failure. tether__scratch_free gives it back (NULL is fine). */
void *tether__scratch(tether_group *g, size_t bytes, const char *what);
void tether__scratch_free(tether_group *g, void *p);

/* Scratch of the small path: in the caller's tether__small (on its stack) when bytes fit, so a
 * small collective makes no malloc; else tether__scratch. tether__scratch_release gives it back. */
#define TETHER__SMALL_BYTES ((size_t)16 * 1024)
typedef struct tether__small {
    max_align_t space[TETHER__SMALL_BYTES / sizeof(max_align_t)];
} tether__small;
void *tether__scratch_small(tether_group *g, tether__small *small, size_t bytes, const char *what);
void tether__scratch_release(tether_group *g, void *p, const tether__small *small);
/* Request slots of the small path: n zeroed slots in the caller's tether__req_local (on its stack)
 * when they fit, else from tether__scratch; tether__req_slots_free gives them back. A calloc and
 * free of them were a fifth of an 8-byte broadcast's instructions on its root. */
#define TETHER__LOCAL_REQS 16
typedef struct tether__req_local {
    tether__req *r[TETHER__LOCAL_REQS];
} tether__req_local;
tether__req **tether__req_slots(tether_group *g, tether__req_local *local, size_t n,
                                const char *what);
void tether__req_slots_free(tether_group *g, tether__req **slots, const tether__req_local *local);
/* bytes rounded up so that what follows in one scratch block is aligned for any element type. */
static inline size_t tether__aligned(size_t bytes)
{
    return (bytes + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
}

/* After a failure with requests still posted: break the world so the transport stops touching
 * buffers the caller is about to free (a no-op if the error already broke it). Returns rc. */
int tether__algo_abort(tether_group *g, int rc);

/* How elements travel: as themselves, or float32 as bfloat16 (c->wire_bf16). */
typedef struct tether__wire {
    tether_dtype dt;
    tether_op op;
    size_t esize; /* bytes per element in memory */
    size_t wsize; /* bytes per element on the wire */
    int bf16;
} tether__wire;

tether__wire tether__wire_of(const tether__coll *c);
/* The bytes to send for n elements at data: data itself, or its bfloat16 copy made in stage. */
const void *tether__wire_pack(const tether__wire *w, const void *data, void *stage, size_t n);
/* data OP= a received message of n elements. */
int tether__wire_reduce(const tether__wire *w, void *data, const void *msg, size_t n);
/* data = input OP a received message of n elements: tether__wire_reduce for an out-of-place first
 * touch, whose copy of input goes block by block just ahead of the reduction. */
int tether__wire_reduce_from(const tether__wire *w, void *data, const void *input, const void *msg,
                             size_t n);
/* data = a received message of n elements (nothing to do when it was received in place). */
void tether__wire_unpack(const tether__wire *w, void *data, const void *msg, size_t n);
/* recv = the n ranks' wire vectors of count elements (rank q's at slots + q * slot_bytes) reduced
 * in rank order 0 .. n - 1, so every rank holding the same vectors computes the same bits; with
 * bf16 on the wire the result is rounded to bfloat16. */
int tether__wire_reduce_slots(const tether__wire *w, void *recv, const char *slots,
                              size_t slot_bytes, int n, size_t count);
/* Run gather(g, c, slots, slot_bytes) with scratch for one wire vector per rank (g->size slots,
 * named what in an out-of-memory error), on the stack when small: the all-reduces that gather every
 * vector and reduce them with tether__wire_reduce_slots. A failure breaks the world first
 * (tether__algo_abort). */
typedef int (*tether__slots_fn)(tether_group *g, const tether__coll *c, char *slots,
                                size_t slot_bytes);
int tether__with_rank_slots(tether_group *g, const tether__coll *c, const char *what,
                            tether__slots_fn gather);

/* The pipelined ring (core/algo/ring_pipeline.c), shared by ring all-reduce, all-gather and
 * reduce-scatter. Ring positions 0..n-1; direction 0 runs clockwise (send to rank + 1), direction 1
 * counter-clockwise. chunks[j] is the chunk of the ring position j. Global steps: reduce-scatter is
 * 0..n-2, all-gather n-1..2n-3; a plan runs steps [first_step, last_step). */
typedef struct tether__ring_dir {
    int to, from, pos;
    tether__span *chunks;
} tether__ring_dir;

typedef struct tether__ring_plan {
    int ndirs;
    tether__ring_dir dir[2];
    int first_step, last_step;
    int round_final;     /* bf16 wire: round each owned chunk to bfloat16 when it is final */
    tether__span *spans; /* storage of every direction's chunks */
} tether__ring_plan;

/* Directions (two when size > 2, so both links of every rank carry data) and chunk storage. */
int tether__ring_plan_init(tether_group *g, tether__ring_plan *p);
void tether__ring_plan_free(tether_group *g, tether__ring_plan *p);
/* The rank at ring position j of direction d. */
int tether__ring_rank_at(int n, int d, int j);
int tether__ring_run(tether_group *g, const tether__coll *c, const tether__ring_plan *p);

/* Direct phases over a full mesh, blocks[b] being rank b's block. Reduce-scatter: every rank sends
 * block q to rank q and reduces what it receives into blocks[me].dst (messages use steps
 * step0 .. step0 + nsegments - 1). All-gather: mine goes to every rank, block q arrives from rank
 * q into blocks[q].dst (message step `step`). stage: bfloat16 staging of the whole vector (bf16
 * wire only, else NULL). */
int tether__rs_direct(tether_group *g, const tether__coll *c, const tether__span *blocks,
                      char *stage, int round_final, uint32_t step0);
int tether__ag_direct(tether_group *g, const tether__coll *c, const char *mine,
                      const tether__span *blocks, char *stage, uint32_t step);

/* The broadcasts (core/algo/broadcast_pipeline.c): a rank's place in the tree the data flows down
 * from the root. tether__bcast_pipeline moves the buffer down it in nseg segments, each passed on
 * as soon as it has arrived. */
typedef struct tether__bcast_shape {
    int parent;       /* group rank, -1 at the root */
    int children[32]; /* group ranks, in send order */
    int nchildren;
} tether__bcast_shape;

/* No parent, no child: the children are written before they are read, so the table is not
 * cleared (a small broadcast's root spent a tenth of its call zeroing it; docs/perf/notes.md,
 * core/algo/algo.h). */
static inline void tether__bcast_shape_init(tether__bcast_shape *t)
{
    t->parent = -1;
    t->nchildren = 0;
}

/* The group rank of v, a rank counted from the root. */
int tether__bcast_rank(const tether_group *g, const tether__coll *c, int v);
int tether__bcast_pipeline(tether_group *g, const tether__coll *c, const tether__bcast_shape *t,
                           size_t nseg);

/* Non-power-of-two folding for the tree and butterfly all-reduce (core/algo/fold.c): of the n
 * ranks, the first 2 * extra pair up (even r, odd r + 1) and the even one hands its vector to the
 * odd one, leaving pof2 survivors, renumbered 0..pof2-1, for the power-of-two algorithm. */
typedef struct tether__fold {
    int pof2;    /* the largest power of two <= n */
    int extra;   /* n - pof2 */
    int newrank; /* this rank among the survivors, -1 if it folded into its partner */
    int rounds;  /* log2(pof2) */
} tether__fold;

tether__fold tether__fold_of(const tether_group *g);
/* The group rank of survivor newrank. */
int tether__fold_rank(const tether__fold *f, int newrank);
/* Hand over (even) or take in and reduce (odd) the vector buf, as message `step`. scratch holds
 * count wire elements, stage (bf16 wire) count bfloat16. */
int tether__fold_in(tether_group *g, const tether__coll *c, const tether__fold *f, char *buf,
                    char *scratch, char *stage, uint32_t step);
/* The odd partner returns the result to its even partner. */
int tether__fold_out(tether_group *g, const tether__coll *c, const tether__fold *f, char *buf,
                     char *scratch, char *stage, uint32_t step);

/* The neighbour exchange (core/algo/neighbor_exchange.c): every rank's block reaches every rank in
 * ceil((n - 1) / 2) steps of messages to the two ring neighbours only, both ways at once. Rank q's
 * block is bytes long at base + q * stride; with bytes 0 every block is empty (barrier). Breaks the
 * world on failure. */
typedef struct tether__nb_blocks {
    char *base;
    size_t stride, bytes;
} tether__nb_blocks;
int tether__neighbor_exchange(tether_group *g, const tether__nb_blocks *b);

/* The algorithms, one file each in core/algo. Each runs c on g with g->size >= 2. */
int tether__allreduce_ring(tether_group *g, const tether__coll *c);
int tether__allreduce_tree(tether_group *g, const tether__coll *c);
int tether__allreduce_butterfly(tether_group *g, const tether__coll *c);
int tether__allreduce_direct(tether_group *g, const tether__coll *c);
int tether__allreduce_neighbor(tether_group *g, const tether__coll *c);
int tether__allgather_ring(tether_group *g, const tether__coll *c);
int tether__allgather_direct(tether_group *g, const tether__coll *c);
int tether__allgather_neighbor(tether_group *g, const tether__coll *c);
int tether__allgather_doubling(tether_group *g, const tether__coll *c);
int tether__reducescatter_ring(tether_group *g, const tether__coll *c);
int tether__reducescatter_direct(tether_group *g, const tether__coll *c);
int tether__broadcast_tree(tether_group *g, const tether__coll *c);
int tether__broadcast_ring(tether_group *g, const tether__coll *c);
int tether__broadcast_neighbor(tether_group *g, const tether__coll *c);
int tether__alltoall_direct(tether_group *g, const tether__coll *c);
int tether__barrier_dissemination(tether_group *g, const tether__coll *c);
int tether__barrier_neighbor(tether_group *g, const tether__coll *c);

#endif
