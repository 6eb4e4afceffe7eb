/* core/registry.c - tether_init: choose a backend from the table in backends/table.c and form the
 * world. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group.h"

/* Every name tether_init and TETHER_BACKEND take, and the backend each means: MLX's JACCL
 * ("jaccl", and "jaccl-ring" for its ring of RDMA links) is the rdma backend here. */
static const struct {
    const char *given, *meant;
} known[] = {
    {"any", "any"},   {"mpi", "mpi"},    {"ring", "ring"},       {"mesh", "mesh"},
    {"rdma", "rdma"}, {"jaccl", "rdma"}, {"jaccl-ring", "rdma"}, {"singleton", "singleton"},
};

const char *const tether__backend_names =
    "any, mpi, ring, mesh, rdma (or jaccl, jaccl-ring) or singleton";

const char *tether__backend_canonical(const char *name)
{
    for (size_t i = 0; name && i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i].given, name) == 0)
            return known[i].meant;
    return NULL;
}

static const tether_transport_ops *find_backend(const char *name)
{
    for (int i = 0; tether_backends[i]; i++)
        if (strcmp(tether_backends[i]->name, name) == 0)
            return tether_backends[i];
    return NULL;
}

/* 1 when ops's configuration is present and it can run here; 0 when it is not configured, -1
 * when it is but cannot run (its library does not load), with why. The configuration comes
 * first: a backend nobody configured loads nothing (the MPI plugin only under mpirun). */
static int ready(const tether_transport_ops *ops, const tether_config *cfg, char *why, size_t len)
{
    if (!ops->configured(cfg, why, len))
        return 0;
    return !ops->usable || ops->usable(why, len) ? 1 : -1;
}

/* One named backend. Not configured: strict -> EUNAVAIL, else the singleton. */
static int init_named(const char *name, int strict, const tether_config *cfg, tether_group **out)
{
    char why[512] = "";
    const tether_transport_ops *ops = find_backend(name);
    if (!ops)
        return tether__fail(TETHER_EUNAVAIL, "backend \"%s\" is not part of this build", name);
    if (!ops->configured(cfg, why, sizeof why)) {
        if (strict)
            return tether__fail(TETHER_EUNAVAIL, "backend \"%s\" is not configured: %s", name, why);
        TLOG_INFO("backend %s not configured (%s): running as a group of size 1", name, why);
        return tether__singleton_open(out);
    }
    if (ops->usable && !ops->usable(why, sizeof why))
        return tether__fail(TETHER_EUNAVAIL, "backend \"%s\" cannot run here: %s", name, why);
    return tether__world_open(ops, cfg, out);
}

/* The backend MLX's variables ask for, tried first by "any", as MLX does: its JACCL variables
 * (MLX_IBV_DEVICES with MLX_JACCL_COORDINATOR) mean rdma; MLX_HOSTFILE alone means ring, whose
 * neighbours-only links are what an MLX ring hostfile describes (a full mesh may not even be
 * cabled). TETHER_HOSTFILE keeps the table's order: tether launch writes it and says the backend in
 * TETHER_BACKEND when its hostfile names one. NULL: the table's order. */
static const char *mlx_preference(const tether_config *cfg)
{
    if (cfg->ibv_devices && cfg->coordinator)
        return "rdma";
    if (cfg->hostfile && !getenv("TETHER_HOSTFILE"))
        return "ring";
    return NULL;
}

/* "any": the first configured backend whose libraries load, the one MLX's variables prefer first.
 * A configuration that is present but fails to form is that backend's error, never a quiet size 1
 * nor a second try by the next backend (mesh and ring read the same hostfile: that took twice
 * TETHER_TIMEOUT and said it twice); only a backend that turns out unavailable (EUNAVAIL) hands
 * over to the next. */
static int init_any(int strict, const tether_config *cfg, tether_group **out)
{
    char lacks[2048] = "", failed[TETHER_ERRMSG_MAX] = "";
    int first_rc = 0, n = 0;
    const tether_transport_ops *order[16];
    const char *first = mlx_preference(cfg);
    for (int i = 0; tether_backends[i] && n < 16; i++)
        if (first && strcmp(tether_backends[i]->name, first) == 0)
            order[n++] = tether_backends[i];
    for (int i = 0; tether_backends[i] && n < 16; i++)
        if (!first || strcmp(tether_backends[i]->name, first) != 0)
            order[n++] = tether_backends[i];
    for (int i = 0; i < n; i++) {
        const tether_transport_ops *ops = order[i];
        char why[1024] = "";
        size_t used = strlen(lacks);
        int state = ready(ops, cfg, why, sizeof why);
        if (state < 0) /* a job meant for it, e.g. mpirun without a plugin: never quietly */
            TLOG_WARN("backend %s is configured but cannot run here: %s", ops->name, why);
        if (state <= 0) {
            snprintf(lacks + used, sizeof lacks - used, "%s%s: %s", used ? "; " : "", ops->name, why);
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
    if (strict)
        return tether__fail(TETHER_EUNAVAIL, "no backend is configured and able to run here (%s)",
                            lacks);
    TLOG_INFO("no backend configured (%s): running as a group of size 1", lacks);
    return tether__singleton_open(out);
}

int tether_init(const char *backend, int strict, tether_group **out)
{
    tether_config cfg;
    tether__clear_error();
    if (!out)
        return tether__fail(TETHER_EINVAL, "tether_init: out is NULL");
    *out = NULL;
    const char *given = backend ? backend : "any";
    if (!(backend = tether__backend_canonical(given)))
        return tether__fail(TETHER_EINVAL, "tether_init: unknown backend \"%s\"; expected %s",
                            given, tether__backend_names);
    const char *env = tether__env("TETHER_BACKEND", NULL);
    if (strcmp(backend, "any") == 0 && env) {
        if (!(backend = tether__backend_canonical(env)))
            return tether__fail(TETHER_ECONFIG, "TETHER_BACKEND=\"%s\": expected %s", env,
                                tether__backend_names);
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
    tether_config cfg;
    char why[1024];
    tether__clear_error();
    if (!backend)
        backend = "any"; /* MLX's is_available() asks about any backend */
    const char *given = backend;
    if (!(backend = tether__backend_canonical(given))) {
        tether__fail(TETHER_EINVAL, "unknown backend \"%s\"; expected %s", given,
                     tether__backend_names);
        return 0;
    }
    if (strcmp(backend, "singleton") == 0)
        return 1;
    if (tether__config_load(&cfg) != TETHER_OK)
        return 0;
    for (int i = 0; tether_backends[i]; i++)
        if (strcmp(backend, "any") == 0 || strcmp(backend, tether_backends[i]->name) == 0) {
            if (ready(tether_backends[i], &cfg, why, sizeof why) > 0)
                return 1;
            tether__fail(TETHER_EUNAVAIL, "backend \"%s\" is not available: %s",
                         tether_backends[i]->name, why);
        }
    return 0;
}
