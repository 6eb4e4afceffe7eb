/* core/group.c - group objects: the world over a transport, its children's memory
 * (core/group_split.c says who they are), free, sticky errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group.h"
#include "params.h"
#include "platform.h"
#include "spin.h"

static tether_group *group_alloc(tether__world *w, int rank, int size)
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

const char *tether__rank_text(const tether_group *g, int r, char *buf, size_t n)
{
    if (g->id == 0) /* the world's group */
        snprintf(buf, n, "rank %d", r);
    else
        snprintf(buf, n, "rank %d of group %08x (world rank %d)", r, g->id,
                 tether__world_rank(g, r));
    return buf;
}

static tether__world *world_alloc(const tether__transport_ops *ops, tether__ep *ep, int rank,
                                  int size)
{
    tether__world *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->ops = ops;
    w->ep = ep;
    w->rank = rank;
    w->size = size;
    w->refs = 1;
    tether__forks_watch();
    w->owner = getpid();
    w->generation = tether__forks;
    pthread_mutex_init(&w->lock, NULL);
    return w;
}

static void world_release(tether__world *w)
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
static int world_group(const tether__transport_ops *ops, tether__ep *ep, const tether__config *cfg,
                       int rank, int size, tether_group **out)
{
    tether__world *w = world_alloc(ops, ep, rank, size);
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
    /* ranks of one host outnumbering its CPUs spin without the hot start (core/spin.h); ranks
     * spread over hosts count as one here, as they rarely crowd a host */
    int here = ops && ops->caps && (ops->caps(ep) & TETHER__CAP_ONE_HOST) ? size : 1;
    w->hot_spin_us = tether__spin_hot_us(here);
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

int tether__world_open(const tether__transport_ops *ops, const tether__config *cfg,
                       tether_group **out)
{
    tether__ep *ep = NULL;
    int rank = -1, size = -1;
    tether__config resolved = *cfg;
    if (resolved.call_timeout_ms < 0) /* unset: heartbeats bound a wait, else the default */
        resolved.call_timeout_ms = ops->alive ? 0 : TETHER__DEFAULT_TIMEOUT_S * 1000;
    cfg = &resolved;
    if (!ops->alive && cfg->call_timeout_ms == 0) /* every wait keeps a bound */
        return tether__fail(TETHER_ECONFIG,
                            "%s=0 waits as long as peers answer heartbeats, which the %s "
                            "backend does not send; give a number of seconds",
                            TETHER__VAR(TIMEOUT), ops->name);
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

/* tether__group_check once the world is broken, or breaking: its message under the lock, out of
 * line, so that the check of a healthy world saves no registers and keeps no buffer. */
TETHER__NOINLINE static int group_broken(tether__world *w)
{
    pthread_mutex_lock(&w->lock);
    int code = atomic_load_explicit(&w->broken, memory_order_relaxed);
    char msg[TETHER__ERRMSG_MAX];
    if (code)
        memcpy(msg, w->broken_msg, sizeof msg);
    pthread_mutex_unlock(&w->lock);
    if (code)
        return tether__fail(code, "group is broken by an earlier failure: %s", msg);
    return TETHER_OK;
}

int tether__group_check(tether_group *g)
{
    tether__world *w = g->world;
    if (!w->ops || !atomic_load_explicit(&w->broken, memory_order_acquire))
        return TETHER_OK;
    return group_broken(w);
}

int tether__call_end(tether_group *g, const char *name, int rc)
{
    if (g && g->world->ws && tether__group_owned(g))
        tether__ws_call_end(g->world->ws, &g->ws_end, g->id, name, rc, tether_last_error());
    return rc;
}

int tether__group_break(tether_group *g, int code)
{
    tether__world *w = g->world;
    int first = 0;
    pthread_mutex_lock(&w->lock);
    if (!atomic_load_explicit(&w->broken, memory_order_relaxed)) {
        first = 1;
        snprintf(w->broken_msg, sizeof w->broken_msg, "%s",
                 tether__has_error() ? tether_last_error() : tether_strerror(code));
        atomic_store_explicit(&w->broken, code, memory_order_release);
    }
    pthread_mutex_unlock(&w->lock);
    if (first && w->ops) {
        TLOG_INFO("breaking the group: %s: %s", tether_err_name(code), w->broken_msg);
        w->ops->abort(w->ep, code, w->broken_msg);
    }
    return code;
}

/* A child that shares the parent's world: one more reference on it. */
static void world_retain(tether__world *w)
{
    pthread_mutex_lock(&w->lock);
    w->refs++;
    pthread_mutex_unlock(&w->lock);
}

tether_group *tether__group_child(tether__world *w, const int *world_ranks, int n, int myrank,
                                  uint32_t id)
{
    tether_group *c = group_alloc(w, myrank, n);
    if (!c)
        return NULL;
    memcpy(c->world_ranks, world_ranks, sizeof *world_ranks * (size_t)n);
    c->id = id;
    world_retain(w);
    return c;
}

void tether_group_free(tether_group *g)
{
    /* In a forked child, nothing: the parent's connections stay open, and the memory goes with the
     * child (its copy of the world is not freed: the lock may have been copied held). */
    if (!g || !tether__group_owned(g))
        return;
    tether__world *w = g->world;
    if (g->comm)
        w->ops->comm_free(w->ep, g->comm);
    tether__pool_clear(&g->scratch);
    tether__passed_drop(w->passed, g->passed);
    free(g->world_ranks);
    free(g->p2p);
    free(g);
    world_release(w);
}
