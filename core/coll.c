/* core/coll.c - the public collectives: clear the error, check arguments, run locally on a group of
 * size 1, else pick the algorithm (once, here), sign the call and run it. A failure before the call
 * is numbered (a bad argument, a malformed algorithm setting) leaves the group usable: the call
 * did not happen, and a retry is the same call on every rank. A failure after that breaks the
 * group. */
#include <string.h>

#include "algo/run.h"
#include "algo/select.h"
#include "argcheck.h"
#include "coll.h"
#include "reduce.h"

/* Every field that must agree across ranks, hashed (64-bit FNV-1a over whole words, folded to 32
 * bits; byte by byte it was a tenth of a small all-reduce's instructions): the transport compares
 * it on every message, so ranks that called different collectives, counts, dtypes, ops, roots or
 * algorithms get TETHER_EMISMATCH instead of wrong data. Each step is a bijection of the word, so
 * calls that differ in one field always differ before the fold. */
#define FNV_OFFSET 14695981039346656037u
#define FNV_PRIME 1099511628211u

uint32_t tether__signature(const tether__coll *c)
{
    uint64_t words[7] = {(uint64_t)c->kind,     (uint64_t)c->count,          (uint64_t)c->dt,
                         (uint64_t)c->op,       (uint64_t)(uint32_t)c->root, (uint64_t)c->algo,
                         (uint64_t)c->wire_bf16};
    uint64_t h = FNV_OFFSET;
    for (int i = 0; i < 7; i++) {
        h ^= words[i];
        h *= FNV_PRIME;
    }
    return (uint32_t)(h ^ (h >> 32));
}

/* The signature a collective's messages carry: its own mixed into the chain of the group's earlier
 * collectives (the same FNV-1a step), which then moves on to it. Broadcast's data flows from the
 * root only, and nothing else checks its signature: ranks that disagree on it without exchanging a
 * message (two roots, or a root whose receivers agree among themselves) return from it, but their
 * chains differ from then on, so the next collective on the group in which they exchange a
 * message fails with TETHER_EMISMATCH, and no later call can pair their stale messages, whose seq
 * is past. This replaces a round of empty messages in every broadcast (docs/guide.md, "Mismatched
 * calls"). Point-to-point calls involve two ranks only and keep their own signature; a child group
 * starts its own chain (split is itself a collective of the parent). */
static uint32_t chained_signature(tether_group *g, uint32_t sig)
{
    uint64_t h = ((uint64_t)g->chain ^ FNV_OFFSET) * FNV_PRIME;
    h = (h ^ sig) * FNV_PRIME;
    g->chain = (uint32_t)(h ^ (h >> 32));
    return g->chain;
}

/* A group of size 1: the result is the input. */
static int run_local(const tether__coll *c)
{
    size_t bytes = c->count * c->esize;
    switch (c->kind) {
    case TETHER__COLL_ALL_REDUCE:
    case TETHER__COLL_ALL_GATHER:
    case TETHER__COLL_REDUCE_SCATTER:
    case TETHER__COLL_ALL_TO_ALL:
        if (bytes && c->send != c->recv)
            memmove(c->recv, c->send, bytes);
        return TETHER_OK;
    case TETHER__COLL_BROADCAST:
    case TETHER__COLL_BARRIER:
    case TETHER__COLL_SEND_RECV:
    case TETHER__COLL_KIND_COUNT:
        return TETHER_OK;
    }
    return TETHER_OK;
}

/* A backend with collectives of its own (MPI) runs the whole call; the signature goes along, for
 * a backend that can check that every rank made the same call. */
int tether__run_in_backend(tether_group *g, const tether__coll *c, const char *name)
{
    tether__world *w = g->world;
    g->cur_name = name;
    int rc = w->ops->run(w->ep, g->comm, c, tether__signature(c));
    if (rc < 0)
        return tether__group_break(g, rc);
    return TETHER_OK;
}

/* c checked, its esize set. */
static int collective(tether_group *g, tether__coll *c, const char *name)
{
    TRY(tether__group_check(g));
    if (g->size == 1)
        return run_local(c);
    if (g->world->ops->run)
        return tether__run_in_backend(g, c, name);
    c->wire_bf16 =
        c->kind == TETHER__COLL_ALL_REDUCE && c->dt == TETHER_FLOAT32 && g->world->cfg.wire_bf16;
    uint32_t sig;
    TRY(tether__algo_choose(g, c, &sig)); /* nothing numbered or sent yet: the group stays usable */
    g->cur_seq = g->seq;
    g->seq = (g->seq + 1) & TETHER__TAG_SEQ_MASK;
    g->cur_sig = chained_signature(g, sig);
    g->cur_name = name;
    g->cur_peer = TETHER__WS_GROUP;
    g->cur_tag = -1;
    TLOG_TRACE("%s seq %u count %zu dtype %d algo %s", name, g->cur_seq, c->count, (int)c->dt,
               tether__algo_name(c->algo));
    int rc = tether__coll_run(g, c);
    if (rc < 0)
        return tether__group_break(g, rc);
    /* every message of the call meant for this rank came: a later one of it is stale */
    tether__passed_set(g->world->passed, &g->passed, g->id, g->seq);
    return TETHER_OK;
}

/* Where a collective with send and recv buffers runs in place, if anywhere. */
typedef enum {
    IN_PLACE_NONE,     /* all_to_all: the buffers must not overlap at all */
    IN_PLACE_SAME,     /* all_reduce: send == recv */
    IN_PLACE_OWN_RECV, /* all_gather: send is this rank's block of recv */
    IN_PLACE_OWN_SEND, /* reduce_scatter: recv is this rank's block of send */
} in_place_form;

/* How such a collective lays out its buffers: one block of count elements, or one per rank. */
typedef struct buffer_layout {
    const char *call; /* "tether_all_reduce", for messages */
    int send_blocks, recv_blocks;
    in_place_form in_place;
} buffer_layout;

/* This rank's block of a buffer of one block of block bytes per rank (NULL for NULL). */
static const void *own_block(const tether_group *g, const void *buf, size_t block)
{
    return buf ? (const char *)buf + (size_t)g->rank * block : NULL;
}

/* send and recv overlap only in the layout's in-place form. */
static int check_overlap(const tether_group *g, const tether__coll *c, const buffer_layout *l)
{
    static const char *const rules[] = {
        [IN_PLACE_NONE] = NULL,
        [IN_PLACE_SAME] = "in place, send must be recv itself",
        [IN_PLACE_OWN_RECV] = "in place, send must be this rank's block of recv",
        [IN_PLACE_OWN_SEND] = "in place, recv must be this rank's block of send",
    };
    size_t block = c->count * c->esize, n = (size_t)g->size;
    int in_place = (l->in_place == IN_PLACE_SAME && c->send == c->recv) ||
                   (l->in_place == IN_PLACE_OWN_RECV && c->send == own_block(g, c->recv, block)) ||
                   (l->in_place == IN_PLACE_OWN_SEND && c->recv == own_block(g, c->send, block));
    return tether__check_overlap(l->call, c->send, l->send_blocks ? block * n : block, c->recv,
                                 l->recv_blocks ? block * n : block, in_place, rules[l->in_place]);
}

/* A collective with send and recv buffers: after clearing the thread's error, the checks they all
 * share (count is the whole vector when neither buffer holds one block per rank; collectives
 * without an op pass TETHER_SUM, which every dtype has), then the call. c->esize from the dtype
 * checked. */
static int checked_collective(tether_group *g, tether__coll *c, const buffer_layout *l,
                              const char *name)
{
    const char *call = l->call;
    int whole = !l->send_blocks && !l->recv_blocks;
    tether__clear_error();
    TRY(tether__check_group(call, g));
    TRY(tether__check_dtype(call, c->dt));
    c->esize = tether_dtype_size(c->dt);
    TRY(tether__check_op(call, c->dt, c->op));
    TRY(tether__check_buf(call, "send", c->send, c->count));
    TRY(tether__check_buf(call, "recv", c->recv, c->count));
    TRY(tether__check_size(call, c->count, whole ? 1 : (size_t)g->size, c->esize));
    if (c->kind == TETHER__COLL_ALL_TO_ALL && c->count && c->send == c->recv)
        return tether__fail(TETHER_EINVAL, "tether_all_to_all: send and recv are the same buffer; "
                                           "all_to_all is not in place");
    TRY(check_overlap(g, c, l));
    return collective(g, c, name);
}

static int buffer_collective(tether_group *g, tether__coll *c, const buffer_layout *l,
                             const char *name)
{
    return tether__call_end(g, name, checked_collective(g, c, l, name));
}

int tether_all_reduce(tether_group *g, const void *send, void *recv, size_t count, tether_dtype dt,
                      tether_op op)
{
    static const buffer_layout l = {"tether_all_reduce", 0, 0, IN_PLACE_SAME};
    tether__coll c = {.kind = TETHER__COLL_ALL_REDUCE, .send = send, .recv = recv, .count = count};
    c.dt = dt;
    c.op = op;
    return buffer_collective(g, &c, &l, "all_reduce");
}

int tether__all_gather_as(tether_group *g, const void *send, void *recv, size_t count,
                          tether_dtype dt, const char *name)
{
    static const buffer_layout l = {"tether_all_gather", 0, 1, IN_PLACE_OWN_RECV};
    tether__coll c = {.kind = TETHER__COLL_ALL_GATHER, .send = send, .recv = recv, .count = count};
    c.dt = dt;
    return buffer_collective(g, &c, &l, name);
}

int tether_all_gather(tether_group *g, const void *send, void *recv, size_t count, tether_dtype dt)
{
    return tether__all_gather_as(g, send, recv, count, dt, "all_gather");
}

int tether_reduce_scatter(tether_group *g, const void *send, void *recv, size_t recv_count,
                          tether_dtype dt, tether_op op)
{
    static const buffer_layout l = {"tether_reduce_scatter", 1, 0, IN_PLACE_OWN_SEND};
    tether__coll c = {.kind = TETHER__COLL_REDUCE_SCATTER, .send = send, .recv = recv};
    c.count = recv_count;
    c.dt = dt;
    c.op = op;
    return buffer_collective(g, &c, &l, "reduce_scatter");
}

static int broadcast(tether_group *g, void *buf, size_t count, tether_dtype dt, int root)
{
    static const char *const call = "tether_broadcast";
    tether__clear_error();
    TRY(tether__check_group(call, g));
    TRY(tether__check_dtype(call, dt));
    TRY(tether__check_buf(call, "buf", buf, count));
    TRY(tether__check_rank(call, "root", root, g->size, g->rank, 1));
    size_t esize = tether_dtype_size(dt);
    TRY(tether__check_size(call, count, 1, esize));
    tether__coll c = {.kind = TETHER__COLL_BROADCAST,
                      .send = buf,
                      .recv = buf,
                      .count = count,
                      .dt = dt,
                      .root = root,
                      .esize = esize};
    return collective(g, &c, "broadcast");
}

int tether_broadcast(tether_group *g, void *buf, size_t count, tether_dtype dt, int root)
{
    return tether__call_end(g, "broadcast", broadcast(g, buf, count, dt, root));
}

int tether_all_to_all(tether_group *g, const void *send, void *recv, size_t count_per_peer,
                      tether_dtype dt)
{
    static const buffer_layout l = {"tether_all_to_all", 1, 1, IN_PLACE_NONE};
    tether__coll c = {.kind = TETHER__COLL_ALL_TO_ALL, .send = send, .recv = recv};
    c.count = count_per_peer;
    c.dt = dt;
    return buffer_collective(g, &c, &l, "all_to_all");
}

static int barrier(tether_group *g)
{
    tether__clear_error();
    TRY(tether__check_group("tether_barrier", g));
    tether__coll c = {.kind = TETHER__COLL_BARRIER, .dt = TETHER_UINT8, .esize = 1};
    return collective(g, &c, "barrier");
}

int tether_barrier(tether_group *g)
{
    return tether__call_end(g, "barrier", barrier(g));
}
