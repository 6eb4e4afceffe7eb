/* backends/mpi/mpi_backend.c - the mpi backend: tether groups as MPI communicators, through a
 * plugin built against the site's MPI (backends/mpi/plugin.h), so libtether links no MPI.
 *
 * It is configured only when an MPI launcher started the process, and only then is the plugin
 * loaded. Every call is one MPI call (ops->run, ops->split): the site's MPI chooses algorithms
 * and network. What MPI does not give, it does not pretend to: no timeout (MPI calls block until
 * they finish; a dead peer is the launcher's to handle, and Open MPI's and MPICH's end the job),
 * no signature on every message (TETHER_MPI_CHECK=1 agrees on each call first instead). */
#include "mpi_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/coll.h"
#include "core/params.h"
#include "core/reduce.h"
#include "load.h"

/* What each launcher sets in every rank's environment; the first two also carry the size. */
static const char *const launcher_vars[] = {
    "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "MPI_LOCALNRANKS", NULL};

typedef struct mpi_ep {
    const tether__mpi_plugin *plugin;
    const char *path;
    void *world;
    int check_calls; /* TETHER_MPI_CHECK */
} mpi_ep;

static const tether__mpi_host host = {.reduce = tether__reduce};

static int mpi_configured(const tether__config *cfg, char *why, size_t why_len)
{
    (void)cfg;
    for (int i = 0; launcher_vars[i]; i++)
        if (tether__env_raw(launcher_vars[i]))
            return 1;
    snprintf(why, why_len,
             "not started by an MPI launcher (mpirun, mpiexec, srun): none of "
             "OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMI_RANK, PMIX_RANK, MPI_LOCALNRANKS "
             "is set");
    return 0;
}

/* Loads the plugin; on success why says which file and which MPI (tether check prints it). */
static int mpi_usable(char *why, size_t why_len)
{
    const char *path;
    const tether__mpi_plugin *p = tether__mpi_plugin_load(&path, why, why_len);
    if (!p)
        return 0;
    char lib[256];
    p->library(lib, sizeof lib);
    snprintf(why, why_len, "plugin %s, built for %s; library: %s", path, p->built_for, lib);
    return 1;
}

/* The size the launcher announced, or 0 where it does not say. */
static long launcher_size(const char **var)
{
    for (int i = 0; i < 2; i++) {
        const char *v = tether__env_raw(launcher_vars[i]);
        if (v) {
            *var = launcher_vars[i];
            return strtol(v, NULL, 10);
        }
    }
    return 0;
}

static void mpi_close(tether__ep *tep)
{
    mpi_ep *ep = (mpi_ep *)tep;
    if (!ep)
        return;
    if (ep->world)
        ep->plugin->free(ep->world);
    free(ep);
}

static int mpi_open(const tether__config *cfg, tether__ep **out, int *rank, int *size)
{
    (void)cfg;
    char why[1024], err[1024];
    long check;
    TRY(tether__param_long(TETHER__P_MPI_CHECK, &check));
    const char *path;
    const tether__mpi_plugin *plugin = tether__mpi_plugin_load(&path, why, sizeof why);
    if (!plugin)
        return tether__fail(TETHER_EUNAVAIL, "mpi: %s", why);
    void *world = NULL;
    int multiple = 0;
    int rc = plugin->init(&host, &world, rank, size, &multiple, err, sizeof err);
    if (rc < 0)
        return tether__fail(rc, "mpi: %s (plugin %s, built for %s)", err, path, plugin->built_for);
    /* A plugin for another MPI than the launcher's starts every rank as a world of its own. */
    const char *var = "";
    long expected = launcher_size(&var);
    if (expected && expected != *size) {
        plugin->free(world);
        return tether__fail(
            TETHER_EUNAVAIL,
            "mpi: the launcher started %ld ranks (%s) but MPI formed a world of %d: "
            "the plugin %s, built for %s, is not the launcher's MPI; "
            "%s names another plugin",
            expected, var, *size, path, plugin->built_for, TETHER__VAR(MPI_PLUGIN));
    }
    if (!multiple) /* the program initialised MPI itself, with less */
        TLOG_WARN("mpi: MPI runs calls from one thread at a time only (not MPI_THREAD_MULTIPLE): "
                  "use this world's groups from one thread at a time");
    mpi_ep *ep = calloc(1, sizeof *ep);
    if (!ep) {
        plugin->free(world);
        return tether__fail(TETHER_ENOMEM, "mpi: out of memory");
    }
    *ep = (mpi_ep){.plugin = plugin, .path = path, .world = world, .check_calls = (int)check};
    TLOG_INFO("mpi: rank %d of %d through %s (%s)", *rank, *size, path, plugin->built_for);
    *out = (tether__ep *)ep;
    return TETHER_OK;
}

static tether__mpi_kind kind_of(const tether__coll *c)
{
    switch (c->kind) {
    case TETHER__COLL_ALL_REDUCE:
        return TETHER__MPI_ALL_REDUCE;
    case TETHER__COLL_ALL_GATHER:
        return TETHER__MPI_ALL_GATHER;
    case TETHER__COLL_REDUCE_SCATTER:
        return TETHER__MPI_REDUCE_SCATTER;
    case TETHER__COLL_BROADCAST:
        return TETHER__MPI_BROADCAST;
    case TETHER__COLL_ALL_TO_ALL:
        return TETHER__MPI_ALL_TO_ALL;
    case TETHER__COLL_BARRIER:
        return TETHER__MPI_BARRIER;
    case TETHER__COLL_SEND_RECV:
    case TETHER__COLL_KIND_COUNT:
        break;
    }
    return c->sending ? TETHER__MPI_SEND : TETHER__MPI_RECV;
}

static int plugin_run(mpi_ep *ep, void *comm, const tether__mpi_call *call)
{
    char err[1024];
    int rc = ep->plugin->run(comm, call, err, sizeof err);
    return rc < 0 ? tether__fail(rc, "mpi: %s", err) : TETHER_OK;
}

/* TETHER_MPI_CHECK: one small all-reduce before the call. The maximum of sig and of ~sig over
 * the ranks are this rank's own only if every rank signed the same call. */
static int agree(mpi_ep *ep, void *comm, uint32_t sig)
{
    uint32_t v[2] = {sig, ~sig};
    tether__mpi_call call = {.kind = TETHER__MPI_ALL_REDUCE,
                             .send = v,
                             .recv = v,
                             .count = 2,
                             .dtype = TETHER_UINT32,
                             .op = TETHER_MAX};
    TRY(plugin_run(ep, comm, &call));
    if (v[0] != sig || v[1] != (uint32_t)~sig)
        return tether__fail(TETHER_EMISMATCH,
                            "mpi: ranks called different collectives, counts, dtypes, ops or roots "
                            "(%s: another rank's call differs from this one's)",
                            TETHER__VAR(MPI_CHECK));
    return TETHER_OK;
}

static int mpi_run(tether__ep *tep, void *comm, const tether__coll *c, uint32_t sig)
{
    mpi_ep *ep = (mpi_ep *)tep;
    void *handle = comm ? comm : ep->world;
    tether__mpi_call call = {.kind = kind_of(c),
                             .send = c->send,
                             .recv = c->recv,
                             .count = c->count,
                             .dtype = c->dt,
                             .op = c->op,
                             .peer = c->root,
                             .source = c->source};
    if (ep->check_calls && c->kind != TETHER__COLL_SEND_RECV)
        TRY(agree(ep, handle, sig));
    return plugin_run(ep, handle, &call);
}

static int mpi_split(tether__ep *tep, void *comm, int color, int key, void **child, int *rank,
                     int *size, int *world_ranks)
{
    mpi_ep *ep = (mpi_ep *)tep;
    char err[1024];
    int rc = ep->plugin->split(comm ? comm : ep->world, color, key, child, rank, size, world_ranks,
                               err, sizeof err);
    return rc < 0 ? tether__fail(rc, "mpi: tether_group_split: %s", err) : TETHER_OK;
}

static void mpi_comm_free(tether__ep *tep, void *comm)
{
    ((mpi_ep *)tep)->plugin->free(comm);
}

/* Nothing to tell the peers: MPI has no way short of ending the job (MPI_Abort), and a program
 * that gets the error and exits non-zero makes the launcher end it anyway. The group's sticky
 * error already fails every later call on this rank. */
static void mpi_abort(tether__ep *tep, int code, const char *msg)
{
    (void)tep;
    (void)code;
    (void)msg;
}

const tether__transport_ops tether__mpi_ops = {
    .name = "mpi",
    .configured = mpi_configured,
    .usable = mpi_usable,
    .open = mpi_open,
    .abort = mpi_abort,
    .close = mpi_close,
    .run = mpi_run,
    .split = mpi_split,
    .comm_free = mpi_comm_free,
};
