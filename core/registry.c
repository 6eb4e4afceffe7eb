/* core/registry.c - tether_init: choose a backend from the table in backends/table.c and form the
 * world. The table's names (and aliases) are the only backend names; its entries are handed out
 * with the defaults of their optional members filled in, and whether one is ready is decided here
 * alone (tether check asks too). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group.h"
#include "params.h"
#include "registry.h"

#define MAX_BACKENDS 16

static int always_usable(char *why, size_t why_len)
{
    (void)why;
    (void)why_len;
    return 1;
}

static uint64_t never_moved(tether__ep *ep)
{
    (void)ep;
    return 0;
}

static void nothing_to_free(tether__ep *ep, void *comm)
{
    (void)ep;
    (void)comm;
}

void tether__transport_defaults(tether__transport_ops *ops)
{
    if (!ops->usable)
        ops->usable = always_usable;
    if (!ops->moved)
        ops->moved = never_moved;
    if (!ops->comm_free)
        ops->comm_free = nothing_to_free;
}

/* The table with defaults, and the names tether_init takes, made from backends/table.c once. */
static tether__transport_ops filled[MAX_BACKENDS];
static int nfilled;
static char names_text[256];
static pthread_once_t filled_once = PTHREAD_ONCE_INIT;

/* Append a then b to names_text, keeping what fits. */
static void names_add(const char *a, const char *b)
{
    size_t used = strlen(names_text);
    snprintf(names_text + used, sizeof names_text - used, "%s%s", a, b);
}

/* "any, mpi, rdma (or jaccl, jaccl-ring), mesh, ring or singleton": the table's order. */
static void describe_names(void)
{
    names_add("any", "");
    for (int i = 0; i < nfilled; i++) {
        const char *sep = " (or ";
        names_add(", ", filled[i].name);
        for (const tether__backend_alias *a = tether__backend_aliases; a->alias; a++)
            if (strcmp(a->backend, filled[i].name) == 0) {
                names_add(sep, a->alias);
                sep = ", ";
            }
        if (sep[0] == ',')
            names_add(")", "");
    }
    names_add(" or singleton", "");
}

static void fill_table(void)
{
    for (; tether__backends[nfilled] && nfilled < MAX_BACKENDS; nfilled++) {
        filled[nfilled] = *tether__backends[nfilled];
        tether__transport_defaults(&filled[nfilled]);
    }
    describe_names();
}

const tether__transport_ops *tether__backend_at(int i)
{
    pthread_once(&filled_once, fill_table);
    return i >= 0 && i < nfilled ? &filled[i] : NULL;
}

const char *tether__backend_names(void)
{
    pthread_once(&filled_once, fill_table);
    return names_text;
}

static const tether__transport_ops *find_backend(const char *name)
{
    const tether__transport_ops *ops;
    for (int i = 0; (ops = tether__backend_at(i)); i++)
        if (strcmp(ops->name, name) == 0)
            return ops;
    return NULL;
}

/* "any" and "singleton" are the core's own; every other name is a backend's in the table, or an
 * alias of one. */
const char *tether__backend_canonical(const char *name)
{
    static const char *const own[] = {"any", "singleton"};
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strcmp(name, own[i]) == 0)
            return own[i];
    for (const tether__backend_alias *a = tether__backend_aliases; a->alias; a++)
        if (strcmp(a->alias, name) == 0) {
            name = a->backend;
            break;
        }
    const tether__transport_ops *ops = find_backend(name);
    return ops ? ops->name : NULL;
}

int tether__backend_ready(const tether__transport_ops *ops, const tether__config *cfg, char *why,
                          size_t why_len)
{
    if (!ops->configured(cfg, why, why_len))
        return 0;
    return ops->usable(why, why_len) ? 1 : -1;
}

/* One named backend. Not configured: strict -> EUNAVAIL, else the singleton. */
static int init_named(const char *name, int strict, const tether__config *cfg, tether_group **out)
{
    char why[512] = "";
    const tether__transport_ops *ops = find_backend(name);
    if (!ops)
        return tether__fail(TETHER_EUNAVAIL, "backend \"%s\" is not part of this build", name);
    int state = tether__backend_ready(ops, cfg, why, sizeof why);
    if (state == 0) {
        if (strict)
            return tether__fail(TETHER_EUNAVAIL, "backend \"%s\" is not configured: %s", name, why);
        TRY(tether__config_job_check(cfg)); /* a job half set up: never size 1 */
        TLOG_INFO("backend %s not configured (%s): running as a group of size 1", name, why);
        return tether__singleton_open(out);
    }
    if (state < 0)
        return tether__fail(TETHER_EUNAVAIL, "backend \"%s\" cannot run here: %s", name, why);
    return tether__world_open(ops, cfg, out);
}

/* The backend MLX's variables ask for, tried first by "any", as MLX does: its JACCL variables
 * (MLX_IBV_DEVICES with MLX_JACCL_COORDINATOR) mean rdma; MLX_HOSTFILE alone means ring, whose
 * neighbours-only links are what an MLX ring hostfile describes (a full mesh may not even be
 * cabled). TETHER_HOSTFILE keeps the table's order: tether launch writes it and says the backend in
 * TETHER_BACKEND when its hostfile names one. NULL: the table's order. */
static const char *mlx_preference(const tether__config *cfg)
{
    if (cfg->ibv_devices && cfg->coordinator)
        return "rdma";
    const char *from = tether__param_from(TETHER__P_HOSTFILE);
    if (cfg->hostfile && from &&
        strcmp(from, tether__params[TETHER__P_HOSTFILE].name)) /* an alias */
        return "ring";
    return NULL;
}

/* "any": the first configured backend whose libraries load, the one MLX's variables prefer first.
 * A configuration that is present but fails to form is that backend's error, never a quiet size 1
 * nor a second try by the next backend (mesh and ring read the same hostfile: that took twice
 * TETHER_TIMEOUT and said it twice); only a backend that turns out unavailable (EUNAVAIL) hands
 * over to the next. */
static int init_any(int strict, const tether__config *cfg, tether_group **out)
{
    char lacks[2048] = "", failed[TETHER__ERRMSG_MAX] = "";
    int first_rc = 0, n = 0;
    const tether__transport_ops *order[MAX_BACKENDS];
    const char *first = mlx_preference(cfg);
    const tether__transport_ops *ops;
    for (int i = 0; (ops = tether__backend_at(i)); i++)
        if (first && strcmp(ops->name, first) == 0)
            order[n++] = ops;
    for (int i = 0; (ops = tether__backend_at(i)); i++)
        if (!first || strcmp(ops->name, first) != 0)
            order[n++] = ops;
    for (int i = 0; i < n; i++) {
        ops = order[i];
        char why[1024] = "";
        size_t used = strlen(lacks);
        int state = tether__backend_ready(ops, cfg, why, sizeof why);
        if (state < 0) /* a job meant for it, e.g. mpirun without a plugin: never quietly */
            TLOG_WARN("backend %s is configured but cannot run here: %s", ops->name, why);
        if (state <= 0) {
            snprintf(lacks + used, sizeof lacks - used, "%s%s: %s", used ? "; " : "", ops->name,
                     why);
            continue;
        }
        int rc = tether__world_open(ops, cfg, out);
        if (rc == TETHER_OK)
            return TETHER_OK;
        if (rc != TETHER_EUNAVAIL) /* the configuration is there and broken: the next backend */
            return rc;             /* would read it too, and wait out the timeout again */
        size_t fused = strlen(failed);
        snprintf(failed + fused, sizeof failed - fused, "%s%s: %s", fused ? "; " : "", ops->name,
                 tether_last_error());
        if (!first_rc)
            first_rc = rc;
        tether__clear_error();
    }
    if (first_rc)
        return tether__fail(first_rc, "no configured backend formed a group: %s", failed);
    TRY(tether__config_job_check(cfg)); /* a job half set up: never size 1 */
    if (strict)
        return tether__fail(TETHER_EUNAVAIL, "no backend is configured and able to run here (%s)",
                            lacks);
    TLOG_INFO("no backend configured (%s): running as a group of size 1", lacks);
    return tether__singleton_open(out);
}

int tether_init(const char *backend, int strict, tether_group **out)
{
    tether__config cfg;
    tether__clear_error();
    if (!out)
        return tether__fail(TETHER_EINVAL, "tether_init: out is NULL");
    *out = NULL;
    const char *given = backend ? backend : "any";
    if (!(backend = tether__backend_canonical(given)))
        return tether__fail(TETHER_EINVAL, "tether_init: unknown backend \"%s\"; expected %s",
                            given, tether__backend_names());
    const char *env;
    int set = tether__param_text(TETHER__P_BACKEND, &env);
    if (strcmp(backend, "any") == 0 && set > 0) {
        if (!(backend = tether__backend_canonical(env)))
            return tether__fail(TETHER_ECONFIG, "%s=\"%s\": expected %s", TETHER__VAR(BACKEND), env,
                                tether__backend_names());
    }
    TRY(tether__config_load(&cfg));
    if (strcmp(backend, "singleton") == 0)
        return tether__singleton_open(out);
    if (strcmp(backend, "any") == 0)
        return init_any(strict, &cfg, out);
    return init_named(backend, strict, &cfg, out);
}

int tether_is_available(const char *backend)
{
    tether__config cfg;
    char why[1024];
    tether__clear_error();
    if (!backend)
        backend = "any"; /* MLX's is_available() asks about any backend */
    const char *given = backend;
    if (!(backend = tether__backend_canonical(given))) {
        tether__fail(TETHER_EINVAL, "unknown backend \"%s\"; expected %s", given,
                     tether__backend_names());
        return 0;
    }
    if (strcmp(backend, "singleton") == 0)
        return 1;
    if (tether__config_load(&cfg) != TETHER_OK)
        return 0;
    const tether__transport_ops *ops;
    for (int i = 0; (ops = tether__backend_at(i)); i++)
        if (strcmp(backend, "any") == 0 || strcmp(backend, ops->name) == 0) {
            if (tether__backend_ready(ops, &cfg, why, sizeof why) > 0)
                return 1;
            tether__fail(TETHER_EUNAVAIL, "backend \"%s\" is not available: %s", ops->name, why);
        }
    return 0;
}
