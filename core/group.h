/* core/group.h - the group object: a view of ranks over one world endpoint, and its sticky error.
 */
#ifndef TETHER_CORE_GROUP_H
#define TETHER_CORE_GROUP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "fork.h"
#include "passed.h"
#include "scratch.h"
#include "transport.h"
#include "waitstate.h"

/* How many groups tether_group_create made with one list of ranks (key: its hash). */
typedef struct tether__create_count {
    uint32_t key, count;
} tether__create_count;

/* One per process and world: the endpoint every group split from it shares. */
typedef struct tether__world {
    const tether__transport_ops *ops; /* NULL for the singleton */
    tether__ep *ep;
    int rank, size;
    int refs; /* groups alive on it; the endpoint closes with the last */
    /* sticky error code of the world, 0 while healthy; set once, under lock, after broken_msg,
     * so that every call's check reads it without the lock while it is 0 */
    atomic_int broken;
    char broken_msg[TETHER__ERRMSG_MAX];
    tether__create_count *creates; /* per list of ranks given to tether_group_create */
    size_t ncreates;
    pthread_mutex_t lock; /* guards refs, broken and creates */
    tether__config cfg;
    int hot_spin_us;        /* a wait's first microseconds without yielding (core/spin.h) */
    pid_t owner;            /* the process that formed it, for messages */
    unsigned generation;    /* tether__forks when it was formed */
    tether__waitstate *ws;  /* what the ranks are doing (heartbeats); NULL without verdicts */
    tether__passed *passed; /* the calls this rank has passed, for the transport's stale
                              messages; NULL where it does not judge them */
} tether__world;

/* Point-to-point messages sent to and received from one peer with one tag, for their tags. */
typedef struct tether__p2p_count {
    int peer, tag;
    uint32_t sent, recvd;
} tether__p2p_count;

/* The kinds of call (core/coll.h's tether__coll_kind), each with a plan in every group. */
#define TETHER__PLAN_KINDS 7
/* The settings an algorithm choice reads (core/algo/select.c): TETHER_ALLREDUCE_ALGO and
 * TETHER_TREE_BELOW. */
#define TETHER__PLAN_SETTINGS 2

/* What a collective's algorithm and signature were worked out from (core/algo/select.c): the
 * call's signed fields but its kind and algorithm, and the settings the choice read as
 * tether__param_peek_values gives them (rc, value; 0 where the kind reads none). */
typedef struct tether__plan_key {
    size_t count;
    tether_dtype dt;
    tether_op op;
    int root, wire_bf16;
    int set[TETHER__PLAN_SETTINGS];
    long value[TETHER__PLAN_SETTINGS];
} tether__plan_key;

/* A group's last call of one kind: its algorithm (a tether__algo; 0, AUTO, while there was none)
 * and signature, which a call of the same key takes without working them out again. */
typedef struct tether__plan {
    tether__plan_key key;
    int algo;
    uint32_t sig;
} tether__plan;

struct tether_group {
    tether__world *world;
    int rank, size;
    int *world_ranks;       /* group rank -> world rank */
    void *comm;             /* the backend's handle for this group when it runs whole collectives
                               (ops->run: an MPI communicator); NULL for the world and otherwise */
    uint32_t id;            /* tag group id */
    uint32_t seq;           /* the next collective's number (wraps at TETHER__TAG_SEQ_MASK) */
    uint32_t chain;         /* the signatures of those collectives, mixed in order (core/coll.c) */
    uint32_t nsplits;       /* splits issued so far (child ids depend on it) */
    tether__p2p_count *p2p; /* per (peer, tag) used so far (core/p2p.c) */
    size_t np2p, p2p_cap;
    int any_last; /* the peer an any-source receive took its last message from (round robin) */
    /* Its record in world->passed, from its first collective. */
    tether__passed_group *passed;
    /* The collective running now; algorithms tag their messages with it. cur_sig is the call's
     * signature mixed into chain (a collective) or its own (point to point). */
    uint32_t cur_seq, cur_sig;
    const char *cur_name;         /* "all_reduce", ... for messages */
    int cur_peer, cur_tag;        /* its peer (world rank, or TETHER__WS_GROUP / _ANY) and p2p tag
                                     (-1: none), for the heartbeats (core/waitstate.h) */
    tether__ws_end ws_end;        /* what its last call's end left in world->ws */
    tether__scratch_pool scratch; /* blocks the algorithms reuse from call to call */
    tether__plan plans[TETHER__PLAN_KINDS]; /* by kind (core/algo/select.c) */
};

/* A group of size 1 over a world with no transport (tether_init's singleton). */
int tether__singleton_open(tether_group **out);

/* 0 if g can run a call, else its (or its world's) sticky error, recorded with tether__fail. */
int tether__group_check(tether_group *g);

/* The end of a public call on g (NULL, or a forked child's copy, are fine) with rc: what the
 * heartbeats tell of this rank (a failure, until the next call; core/waitstate.h). Returns rc. */
int tether__call_end(tether_group *g, const char *name, int rc);

/* Break g's world after a failure in a call that has moved bytes: every group on it fails from
 * now on with code. msg is the recorded text. Returns code. */
int tether__group_break(tether_group *g, int code);

/* A child group of w's: its ranks are the world ranks world_ranks[0..n) in that order, this
 * process being its rank myrank, its id id; one more reference on w. NULL when out of memory. */
tether_group *tether__group_child(tether__world *w, const int *world_ranks, int n, int myrank,
                                  uint32_t id);

/* Form a world group over ops with cfg (rank/size/timeouts already loaded): ops->open, then the
 * group object. ops has its defaults filled (tether__backend_at, tether__transport_defaults) and
 * outlives the world. tether_init uses it for every backend; tests use it with tests/support's
 * in-process transport. */
int tether__world_open(const tether__transport_ops *ops, const tether__config *cfg,
                       tether_group **out);

/* 1 in the process that formed g, 0 in a forked child of it. The child's copy of g must not touch
 * the world: its sockets are the parent's too (a shutdown or a close frame would end the parent's
 * connections), its progress and heartbeat threads did not come along, and its lock may have been
 * copied held. */
static inline int tether__group_owned(const tether_group *g)
{
    return g->world->generation == tether__forks;
}

/* The world rank of group rank r. */
static inline int tether__world_rank(const tether_group *g, int r)
{
    return g->world_ranks[r];
}

/* How a message names rank r of g: "rank R" in the world group, and "rank R of group G (world rank
 * W)" in a split or created one, whose numbers are not the processes' (TETHER_RANK, the launcher's
 * output, the transport's messages all number the world). Written into buf; returns buf. Every
 * message of the core that names a rank of a group goes through it, most by TETHER__RANK_TEXT. */
#define TETHER__RANK_TEXT_MAX 64
const char *tether__rank_text(const tether_group *g, int r, char *buf, size_t n);
/* The same into a buffer that lives until the end of the enclosing block: for tether__fail's
 * arguments. */
#define TETHER__RANK_TEXT(g, r)                                                                    \
    tether__rank_text((g), (r), (char[TETHER__RANK_TEXT_MAX]){0}, TETHER__RANK_TEXT_MAX)

/* The tag of g's current call at step. */
static inline tether__tag tether__tag_of(const tether_group *g, uint32_t step)
{
    return (tether__tag){.group = g->id, .seq = g->cur_seq, .step = step, .sig = g->cur_sig};
}

#endif
