/* core/group.c - group objects: the world over a transport, split into children, free, sticky
 * errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argcheck.h"
#include "coll.h"
#include "group.h"

static tether_group *group_alloc(tether_world *w, int rank, int size)
{
    tether_group *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->world = w;
    g->rank = rank;
    g->size = size;
    g->world_ranks = calloc((size_t)size, sizeof *g->world_ranks);
    g->cur_name = "";
    g->cur_peer = TETHER__WS_GROUP;
    g->cur_tag = -1;
    if (!g->world_ranks) {
        free(g);
        return NULL;
    }
    return g;
}

unsigned tether__forks;
static pthread_once_t forks_once = PTHREAD_ONCE_INIT;

static void count_fork(void)
{
    tether__forks++; /* in the child only, while it has one thread */
}

static void watch_forks(void)
{
    pthread_atfork(NULL, NULL, count_fork);
}

const char *tether__rank_text(const tether_group *g, int r, char *buf, size_t n)
{
    if (g->id == 0) /* the world's group */
        snprintf(buf, n, "rank %d", r);
    else
        snprintf(buf, n, "rank %d of group %08x (world rank %d)", r, g->id,
                 tether__world_rank(g, r));
    return buf;
}

static tether_world *world_alloc(const tether_transport_ops *ops, tether_ep *ep, int rank, int size)
{
    tether_world *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->ops = ops;
    w->ep = ep;
    w->rank = rank;
    w->size = size;
    w->refs = 1;
    pthread_once(&forks_once, watch_forks);
    w->owner = getpid();
    w->generation = tether__forks;
    pthread_mutex_init(&w->lock, NULL);
    return w;
}

static void world_release(tether_world *w)
{
    pthread_mutex_lock(&w->lock);
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->lock);
    if (!last)
        return;
    if (w->ops)
        w->ops->close(w->ep); /* its heartbeats end: nothing reads ws after it */
    tether__ws_free(w->ws);
    tether__passed_free(w->passed);
    pthread_mutex_destroy(&w->lock);
    free(w->creates);
    free(w);
}

/* A world of n ranks and the group that spans it. */
static int world_group(const tether_transport_ops *ops, tether_ep *ep, const tether_config *cfg,
                       int rank, int size, tether_group **out)
{
    tether_world *w = world_alloc(ops, ep, rank, size);
    tether_group *g = w ? group_alloc(w, rank, size) : NULL;
    if (!g) {
        free(w);
        if (ops)
            ops->close(ep);
        return tether__fail(TETHER_ENOMEM, "out of memory creating a group of %d ranks", size);
    }
    if (cfg)
        w->cfg = *cfg;
    else
        tether__config_load(&w->cfg); /* singleton: defaults are enough; errors were reported */
    /* the heartbeats carry what each rank is doing; out of memory, waits go on without verdicts */
    if (ops && ops->watch && ops->alive && size > 1 && w->cfg.deadlock) {
        w->ws = tether__ws_new(rank, size, w->cfg.heartbeat_ms);
        if (w->ws)
            ops->watch(ep, w->ws);
    }
    /* out of memory, kept messages of disagreeing calls stay until close, as without the rule */
    if (ops && ops->track && size > 1 && (w->passed = tether__passed_new()) != NULL)
        ops->track(ep, w->passed);
    for (int r = 0; r < size; r++)
        g->world_ranks[r] = r;
    *out = g;
    return TETHER_OK;
}

int tether__world_open(const tether_transport_ops *ops, const tether_config *cfg,
                       tether_group **out)
{
    tether_ep *ep = NULL;
    int rank = -1, size = -1;
    tether_config resolved = *cfg;
    if (resolved.call_timeout_ms < 0) /* unset: heartbeats bound a wait, else the default */
        resolved.call_timeout_ms = ops->alive ? 0 : TETHER_DEFAULT_TIMEOUT_S * 1000;
    cfg = &resolved;
    if (!ops->alive && cfg->call_timeout_ms == 0) /* every wait keeps a bound */
        return tether__fail(TETHER_ECONFIG,
                            "TETHER_TIMEOUT=0 waits as long as peers answer heartbeats, which "
                            "the %s backend does not send; give a number of seconds",
                            ops->name);
    TRY(ops->open(cfg, &ep, &rank, &size));
    if (rank < 0 || size < 1 || rank >= size) {
        ops->close(ep);
        return tether__fail(TETHER_EINTERNAL, "backend %s formed a group with rank %d of %d",
                            ops->name, rank, size);
    }
    tether__log_identity(rank, size, ops->name);
    TLOG_INFO("group formed: rank %d of %d over %s", rank, size, ops->name);
    return world_group(ops, ep, cfg, rank, size, out);
}

int tether__singleton_open(tether_group **out)
{
    return world_group(NULL, NULL, NULL, 0, 1, out);
}

int tether_group_rank(const tether_group *g)
{
    return g ? g->rank : -1;
}

int tether_group_size(const tether_group *g)
{
    return g ? g->size : 0;
}

const char *tether_group_backend(const tether_group *g)
{
    if (!g)
        return "";
    return g->world->ops ? g->world->ops->name : "singleton";
}

int tether__group_check(tether_group *g)
{
    tether_world *w = g->world;
    if (!w->ops)
        return TETHER_OK;
    pthread_mutex_lock(&w->lock);
    int code = w->broken;
    char msg[TETHER_ERRMSG_MAX];
    if (code)
        memcpy(msg, w->broken_msg, sizeof msg);
    pthread_mutex_unlock(&w->lock);
    if (code)
        return tether__fail(code, "group is broken by an earlier failure: %s", msg);
    return TETHER_OK;
}

int tether__call_end(tether_group *g, const char *name, int rc)
{
    if (g && g->world->ws && tether__group_owned(g))
        tether__ws_call_end(g->world->ws, g->id, name, rc, tether_last_error());
    return rc;
}

int tether__group_break(tether_group *g, int code)
{
    tether_world *w = g->world;
    int first = 0;
    pthread_mutex_lock(&w->lock);
    if (!w->broken) {
        first = 1;
        w->broken = code;
        snprintf(w->broken_msg, sizeof w->broken_msg, "%s",
                 tether__has_error() ? tether_last_error() : tether_strerror(code));
    }
    pthread_mutex_unlock(&w->lock);
    if (first && w->ops) {
        TLOG_INFO("breaking the group: %s: %s", tether_err_name(code), w->broken_msg);
        w->ops->abort(w->ep, code, w->broken_msg);
    }
    return code;
}

/* FNV-1a over n words, continuing from h (2166136261 to start). */
static uint32_t hash_words(uint32_t h, const uint32_t *words, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 4; b++) {
            h ^= (words[i] >> (8 * b)) & 0xffu;
            h *= 16777619u;
        }
    return h;
}

/* Child group ids must agree on every member and differ between siblings: mix the parent's id,
 * the parent's split number and the colour. */
static uint32_t child_id(const tether_group *parent, int color)
{
    uint32_t words[3] = {parent->id, parent->nsplits, (uint32_t)color};
    uint32_t h = hash_words(2166136261u, words, 3);
    return h ? h : 1; /* 0 is the world's */
}

/* A child that shares the parent's world: one more reference on it. */
static void world_retain(tether_world *w)
{
    pthread_mutex_lock(&w->lock);
    w->refs++;
    pthread_mutex_unlock(&w->lock);
}

/* A group over parent ranks members[0..n), this process being member myrank: the world shared,
 * one more reference on it. */
static tether_group *child_alloc(tether_group *parent, const int *members, int n, int myrank,
                                 uint32_t id)
{
    tether_group *c = group_alloc(parent->world, myrank, n);
    if (!c)
        return NULL;
    for (int i = 0; i < n; i++)
        c->world_ranks[i] = parent->world_ranks[members[i]];
    c->id = id;
    world_retain(parent->world);
    return c;
}

typedef struct split_entry {
    int32_t color, key, parent_rank;
} split_entry;

static int split_order(const void *a, const void *b)
{
    const split_entry *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->parent_rank - y->parent_rank;
}

/* Split by the backend itself (ops->split: MPI_Comm_split), which also orders the members. */
static int split_in_backend(tether_group *g, int color, int key, tether_group **out)
{
    tether_world *w = g->world;
    TRY(tether__group_check(g));
    int *members = malloc(sizeof *members * (size_t)g->size), rank = -1, size = 0;
    void *comm = NULL;
    if (!members)
        return tether__fail(TETHER_ENOMEM, "tether_group_split: out of memory for %d ranks",
                            g->size);
    int rc = w->ops->split(w->ep, g->comm, color, key, &comm, &rank, &size, members);
    if (rc < 0) {
        free(members);
        return tether__group_break(g, rc);
    }
    g->nsplits++;
    tether_group *c = comm ? group_alloc(w, rank, size) : NULL;
    if (comm && !c) {
        w->ops->comm_free(w->ep, comm);
        free(members);
        return tether__fail(TETHER_ENOMEM, "tether_group_split: out of memory for a group of %d",
                            size);
    }
    if (c) {
        memcpy(c->world_ranks, members, sizeof *members * (size_t)size);
        c->comm = comm;
        c->id = child_id(g, color);
        world_retain(w);
        TLOG_INFO("split: colour %d -> rank %d of %d", color, rank, size);
    }
    free(members);
    *out = c;
    return TETHER_OK;
}

static int split(tether_group *g, int color, int key, tether_group **out)
{
    tether__clear_error();
    TRY(tether__check_group("tether_group_split", g));
    if (!out)
        return tether__fail(TETHER_EINVAL, "tether_group_split: out is NULL");
    *out = NULL;
    if (g->world->ops && g->world->ops->split)
        return split_in_backend(g, color, key, out);
    int32_t mine[2] = {color, key}, *all = malloc(sizeof(int32_t) * 2 * (size_t)g->size);
    split_entry *members = malloc(sizeof *members * (size_t)g->size);
    int rc = TETHER_ENOMEM;
    if (!all || !members) {
        rc = tether__fail(TETHER_ENOMEM, "tether_group_split: out of memory for %d ranks", g->size);
        goto done;
    }
    /* Everyone learns every (color, key): one all-gather on the parent. */
    TRY_GOTO(rc, tether__all_gather_as(g, mine, all, 2, TETHER_INT32, "tether_group_split"), done);
    int n = 0, myrank = -1;
    for (int r = 0; r < g->size; r++) {
        if (all[2 * r] != color)
            continue;
        int32_t k = all[2 * r + 1];
        members[n++] = (split_entry){color, k < 0 ? r : k, r};
    }
    g->nsplits++;
    if (color < 0) { /* not a member of any child, as MPI_UNDEFINED */
        rc = TETHER_OK;
        goto done;
    }
    qsort(members, (size_t)n, sizeof *members, split_order);
    for (int i = 0; i < n; i++)
        if (members[i].parent_rank == g->rank)
            myrank = i;
    int *parent_ranks = malloc(sizeof *parent_ranks * (size_t)n);
    for (int i = 0; parent_ranks && i < n; i++)
        parent_ranks[i] = members[i].parent_rank;
    tether_group *c =
        parent_ranks ? child_alloc(g, parent_ranks, n, myrank, child_id(g, color)) : NULL;
    free(parent_ranks);
    if (!c) {
        rc = tether__fail(TETHER_ENOMEM, "tether_group_split: out of memory for a group of %d", n);
        goto done;
    }
    TLOG_INFO("split: colour %d -> rank %d of %d (group id %08x)", color, myrank, n, c->id);
    *out = c;
    rc = TETHER_OK;
done:
    free(all);
    free(members);
    return rc;
}

int tether_group_split(tether_group *g, int color, int key, tether_group **out)
{
    return tether__call_end(g, "tether_group_split", split(g, color, key, out));
}

/* The how-many-th call of tether_group_create with this list key this is on the world (0 first).
 * Counted on the world, under its lock: the parent may be in use on another thread. */
static int create_number(tether_world *w, uint32_t key, uint32_t *number)
{
    int rc = TETHER_OK;
    pthread_mutex_lock(&w->lock);
    size_t i = 0;
    while (i < w->ncreates && w->creates[i].key != key)
        i++;
    if (i == w->ncreates) {
        tether_create_count *grown = realloc(w->creates, (i + 1) * sizeof *grown);
        if (grown) {
            w->creates = grown;
            w->creates[w->ncreates++] = (tether_create_count){.key = key, .count = 0};
        } else {
            rc = TETHER_ENOMEM;
        }
    }
    if (rc == TETHER_OK)
        *number = w->creates[i].count++;
    pthread_mutex_unlock(&w->lock);
    return rc;
}

static int create(tether_group *g, const int *ranks, int n, tether_group **out)
{
    static const char *const call = "tether_group_create";
    tether__clear_error();
    if (out)
        *out = NULL;
    TRY(tether__check_group(call, g));
    if (!out || !ranks || n < 1 || n > g->size)
        return tether__fail(TETHER_EINVAL,
                            "%s: %s; expected a list of 1 to %d parent ranks and "
                            "where to store the group",
                            call,
                            !out     ? "out is NULL"
                            : !ranks ? "ranks is NULL"
                                     : "bad count",
                            g->size);
    int myrank = -1;
    for (int i = 0; i < n; i++) {
        TRY(tether__check_rank(call, "ranks[i]", ranks[i], g->size, g->rank, 1));
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i])
                return tether__fail(TETHER_EINVAL,
                                    "%s: rank %d is listed twice (ranks[%d] and "
                                    "ranks[%d])",
                                    call, ranks[i], j, i);
        if (ranks[i] == g->rank)
            myrank = i;
    }
    if (g->world->ops && g->world->ops->split)
        return tether__fail(TETHER_EUNAVAIL,
                            "%s: the %s backend forms groups by tether_group_split only", call,
                            g->world->ops->name);
    if (myrank < 0)
        return tether__fail(TETHER_EINVAL,
                            "%s: this rank (%s) is not in the list; only the "
                            "listed ranks call it",
                            call, TETHER_RANK_TEXT(g, g->rank));
    uint32_t head[2] = {g->id, (uint32_t)n}, key = hash_words(2166136261u, head, 2), number;
    key = hash_words(key, (const uint32_t *)ranks, (size_t)n);
    if (create_number(g->world, key, &number) != TETHER_OK)
        return tether__fail(TETHER_ENOMEM, "%s: out of memory", call);
    uint32_t id = hash_words(key, &number, 1); /* 0 is the world's */
    tether_group *c = child_alloc(g, ranks, n, myrank, id ? id : 1);
    if (!c)
        return tether__fail(TETHER_ENOMEM, "%s: out of memory for a group of %d", call, n);
    /* Every member arrives, with the same list: an all-gather of the key on the new group (ranks
     * that listed others form other groups and never meet: TETHER_ETIMEDOUT names the call). */
    uint32_t *keys = malloc(sizeof *keys * (size_t)n);
    int rc = keys ? tether__all_gather_as(c, &key, keys, 1, TETHER_UINT32, call)
                  : tether__fail(TETHER_ENOMEM, "%s: out of memory", call);
    for (int i = 0; rc == TETHER_OK && i < n; i++)
        if (keys[i] != key)
            rc = tether__fail(TETHER_EMISMATCH, "%s: %s passed another list of ranks", call,
                              TETHER_RANK_TEXT(c, i));
    free(keys);
    if (rc != TETHER_OK) {
        tether_group_free(c);
        return rc;
    }
    TLOG_INFO("create: %d ranks -> rank %d (group id %08x)", n, myrank, c->id);
    *out = c;
    return TETHER_OK;
}

int tether_group_create(tether_group *g, const int *ranks, int n, tether_group **out)
{
    return tether__call_end(g, "tether_group_create", create(g, ranks, n, out));
}

void tether_group_free(tether_group *g)
{
    /* In a forked child, nothing: the parent's connections stay open, and the memory goes with the
     * child (its copy of the world is not freed: the lock may have been copied held). */
    if (!g || !tether__group_owned(g))
        return;
    tether_world *w = g->world;
    if (g->comm)
        w->ops->comm_free(w->ep, g->comm);
    tether__pool_clear(&g->scratch);
    tether__passed_drop(w->passed, g->passed);
    free(g->world_ranks);
    free(g->p2p);
    free(g);
    world_release(w);
}
