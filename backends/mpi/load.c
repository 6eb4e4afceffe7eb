/* backends/mpi/load.c - finding and loading the MPI plugin with dlopen, once per process.
 *
 * A plugin is built per MPI (their ABIs differ), so the launcher that started the process says
 * which to try first: Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE, MPICH's hydra PMI_SIZE and
 * MPI_LOCALNRANKS. The file is looked for beside the module holding libtether (libtether.so, or a
 * program linked with the static library), then by name on the loader's search path, as an
 * installed plugin sits beside an installed libtether. */
/* dladdr is an extension every system tether runs on has (glibc declares it only for GNU
 * sources; the portable build asks for POSIX + defaults). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/params.h"

#if defined(__APPLE__)
#define PLUGIN_SUFFIX ".dylib"
#else
#define PLUGIN_SUFFIX ".so"
#endif
#define PLUGIN_PATH_MAX 1024

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const tether__mpi_plugin *loaded;
static char loaded_path[PLUGIN_PATH_MAX];

/* The flavours to try, the launcher's own first. */
static void flavours(const char **first, const char **second)
{
    int hydra = !tether__env_raw("OMPI_COMM_WORLD_SIZE") &&
                (tether__env_raw("PMI_SIZE") || tether__env_raw("MPI_LOCALNRANKS"));
    *first = hydra ? "mpich" : "openmpi";
    *second = hydra ? "openmpi" : "mpich";
}

/* The directory of the module this code is in, absolute (the program may change directory),
 * with a trailing slash; "" if unknown. */
static void own_dir(char *dir, size_t len)
{
    Dl_info info;
    char *real;
    dir[0] = '\0';
    if (!dladdr((void *)own_dir, &info) || !info.dli_fname ||
        !(real = realpath(info.dli_fname, NULL)))
        return;
    int n = snprintf(dir, len, "%s", real);
    free(real);
    if (n < 0 || (size_t)n >= len)
        dir[0] = '\0';
    else
        strrchr(dir, '/')[1] = '\0';
}

/* dlopen path and check its table; NULL with the reason appended to why. */
static const tether__mpi_plugin *try_open(const char *path, char *why, size_t why_len)
{
    size_t used = strlen(why);
    /* GLOBAL: MPI libraries dlopen their own components, which expect libmpi's symbols to be
     * visible (mpi4py and MLX load MPI the same way). NODELETE: MPI is finalised at exit. */
    void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
    if (!lib) {
        snprintf(why + used, why_len - used, "%s%s", used ? "; " : "", dlerror());
        return NULL;
    }
    tether__mpi_plugin_fn get;
    void *sym = dlsym(lib, TETHER__MPI_PLUGIN_SYMBOL);
    /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
    memcpy(&get, &sym, sizeof get);
    const tether__mpi_plugin *p = sym ? get() : NULL;
    if (!p)
        snprintf(why + used, why_len - used, "%s%s: no %s: not a tether MPI plugin",
                 used ? "; " : "", path, TETHER__MPI_PLUGIN_SYMBOL);
    else if (p->abi != TETHER__MPI_PLUGIN_ABI)
        snprintf(why + used, why_len - used,
                 "%s%s: plugin interface %d, this libtether needs %d: rebuild the plugin with it",
                 used ? "; " : "", path, p->abi, TETHER__MPI_PLUGIN_ABI);
    if (!p || p->abi != TETHER__MPI_PLUGIN_ABI) {
        dlclose(lib);
        return NULL;
    }
    return p;
}

/* Each flavour's file beside libtether, then by name; the first that loads. */
static const tether__mpi_plugin *search(char *path, char *why, size_t why_len)
{
    char dir[PLUGIN_PATH_MAX];
    const char *flavour[2];
    own_dir(dir, sizeof dir);
    flavours(&flavour[0], &flavour[1]);
    for (int f = 0; f < 2; f++)
        for (int where = dir[0] ? 0 : 1; where < 2; where++) {
            int n = snprintf(path, PLUGIN_PATH_MAX, "%slibtether-mpi-%s" PLUGIN_SUFFIX,
                             where ? "" : dir, flavour[f]);
            if (n < 0 || n >= PLUGIN_PATH_MAX)
                continue; /* a directory too deep for the buffer: the search path may have it */
            const tether__mpi_plugin *p = try_open(path, why, why_len);
            if (p)
                return p;
        }
    return NULL;
}

const tether__mpi_plugin *tether__mpi_plugin_load(const char **path, char *why, size_t why_len)
{
    const char *named;
    tether__param_text(TETHER__P_MPI_PLUGIN, &named);
    char tried[PLUGIN_PATH_MAX * 2] = "";
    pthread_mutex_lock(&lock);
    if (!loaded) {
        if (named && *named) {
            snprintf(loaded_path, sizeof loaded_path, "%s", named);
            loaded = try_open(named, tried, sizeof tried);
        } else {
            loaded = search(loaded_path, tried, sizeof tried);
        }
    }
    const tether__mpi_plugin *p = loaded;
    pthread_mutex_unlock(&lock);
    *path = loaded_path;
    if (!p)
        snprintf(why, why_len,
                 "no MPI plugin loads (%s); build one for this MPI (docs/mpi.md) or "
                 "name it with %s",
                 tried, TETHER__VAR(MPI_PLUGIN));
    return p;
}
