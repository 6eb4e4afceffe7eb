/* core/group.c - group objects: the world over a transport, split into children, free, sticky
 * errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (!g->world_ranks) {
        free(g);
        return NULL;
    }
    return g;
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
        w->ops->close(w->ep);
    pthread_mutex_destroy(&w->lock);
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

/* Child group ids must agree on every member and differ between siblings: mix the parent's id,
 * the parent's split number and the colour (FNV-1a over the three words). */
static uint32_t child_id(const tether_group *parent, int color)
{
    uint32_t words[3] = {parent->id, parent->nsplits, (uint32_t)color};
    uint32_t h = 2166136261u;
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 4; b++) {
            h ^= (words[i] >> (8 * b)) & 0xffu;
            h *= 16777619u;
        }
    return h ? h : 1; /* 0 is the world's */
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

/* A child that shares the parent's world: one more reference on it. */
static void world_retain(tether_world *w)
{
    pthread_mutex_lock(&w->lock);
    w->refs++;
    pthread_mutex_unlock(&w->lock);
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

int tether_group_split(tether_group *g, int color, int key, tether_group **out)
{
    tether__clear_error();
    if (!g || !out)
        return tether__fail(TETHER_EINVAL, "tether_group_split: %s is NULL", g ? "out" : "group");
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
    tether_group *c = group_alloc(g->world, myrank, n);
    if (!c) {
        rc = tether__fail(TETHER_ENOMEM, "tether_group_split: out of memory for a group of %d", n);
        goto done;
    }
    for (int i = 0; i < n; i++)
        c->world_ranks[i] = g->world_ranks[members[i].parent_rank];
    c->id = child_id(g, color);
    world_retain(g->world);
    TLOG_INFO("split: colour %d -> rank %d of %d (group id %08x)", color, myrank, n, c->id);
    *out = c;
    rc = TETHER_OK;
done:
    free(all);
    free(members);
    return rc;
}

void tether_group_free(tether_group *g)
{
    if (!g)
        return;
    tether_world *w = g->world;
    if (g->comm)
        w->ops->comm_free(w->ep, g->comm);
    tether__pool_clear(&g->scratch);
    free(g->world_ranks);
    free(g->p2p);
    free(g);
    world_release(w);
}
