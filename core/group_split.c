/* core/group_split.c - child groups: tether_group_split (MPI_Comm_split's rule) and
 * tether_group_create (an ordered list of ranks), agreed on by an all-gather of the members' wishes
 * (core/coll.c), or by the backend where it splits on its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argcheck.h"
#include "coll.h"
#include "group.h"

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
    tether__world *w = g->world;
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
    tether_group *c = comm ? tether__group_child(w, members, size, rank, child_id(g, color)) : NULL;
    if (comm && !c) {
        w->ops->comm_free(w->ep, comm);
        free(members);
        return tether__fail(TETHER_ENOMEM, "tether_group_split: out of memory for a group of %d",
                            size);
    }
    if (c) {
        c->comm = comm;
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
    int *world_ranks = malloc(sizeof *world_ranks * (size_t)n);
    for (int i = 0; world_ranks && i < n; i++)
        world_ranks[i] = tether__world_rank(g, members[i].parent_rank);
    tether_group *c =
        world_ranks ? tether__group_child(g->world, world_ranks, n, myrank, child_id(g, color))
                    : NULL;
    free(world_ranks);
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
static int create_number(tether__world *w, uint32_t key, uint32_t *number)
{
    int rc = TETHER_OK;
    pthread_mutex_lock(&w->lock);
    size_t i = 0;
    while (i < w->ncreates && w->creates[i].key != key)
        i++;
    if (i == w->ncreates) {
        tether__create_count *grown = realloc(w->creates, (i + 1) * sizeof *grown);
        if (grown) {
            w->creates = grown;
            w->creates[w->ncreates++] = (tether__create_count){.key = key, .count = 0};
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
                            call, TETHER__RANK_TEXT(g, g->rank));
    uint32_t head[2] = {g->id, (uint32_t)n}, key = hash_words(2166136261u, head, 2), number;
    key = hash_words(key, (const uint32_t *)ranks, (size_t)n);
    if (create_number(g->world, key, &number) != TETHER_OK)
        return tether__fail(TETHER_ENOMEM, "%s: out of memory", call);
    uint32_t id = hash_words(key, &number, 1); /* 0 is the world's */
    int *world_ranks = malloc(sizeof *world_ranks * (size_t)n);
    for (int i = 0; world_ranks && i < n; i++)
        world_ranks[i] = tether__world_rank(g, ranks[i]);
    tether_group *c =
        world_ranks ? tether__group_child(g->world, world_ranks, n, myrank, id ? id : 1) : NULL;
    free(world_ranks);
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
                              TETHER__RANK_TEXT(c, i));
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
