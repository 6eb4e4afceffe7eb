/* backends/mpi/plugin.h - the whole interface between libtether and an MPI plugin.
 *
 * MPI has no common ABI across implementations, so libtether never links one: a plugin
 * (libtether-mpi-openmpi.so, libtether-mpi-mpich.so; .dylib on macOS) is compiled against one MPI's
 * mpi.h and linked with its library, and the mpi backend dlopens it at tether_init, as NCCL loads
 * its net plugins. The plugin exports one symbol, TETHER__MPI_PLUGIN_SYMBOL, a function returning
 * its table; nothing else crosses, and no MPI type appears here. Groups are opaque handles (a
 * communicator each); buffers, counts, dtypes and ops are tether's own (include/tether.h).
 *
 * Calls return TETHER_OK or a negative TETHER_E* code, and on failure write one line into the
 * caller's err buffer (with MPI's own error string where MPI failed). A plugin is used from
 * several threads at once only on different communicators, as tether groups are.
 *
 * Changing anything here changes TETHER__MPI_PLUGIN_ABI: libtether refuses a plugin built for
 * another one, naming both numbers.
 */
#ifndef TETHER_BACKENDS_MPI_PLUGIN_H
#define TETHER_BACKENDS_MPI_PLUGIN_H

#include <stddef.h>

#include "tether.h"

#define TETHER__MPI_PLUGIN_ABI 2 /* 2: tether__mpi_call.source (TETHER_ANY_SOURCE) */
#define TETHER__MPI_PLUGIN_SYMBOL "tether__mpi_plugin_v1"

/* What a call does. Its own numbers, not core's, so the ABI stays put when core changes. */
typedef enum {
    TETHER__MPI_ALL_REDUCE,
    TETHER__MPI_ALL_GATHER,
    TETHER__MPI_REDUCE_SCATTER, /* count: each rank's block; send holds count * size */
    TETHER__MPI_BROADCAST,      /* recv is the buffer, peer the root */
    TETHER__MPI_ALL_TO_ALL,     /* count: per peer */
    TETHER__MPI_BARRIER,
    TETHER__MPI_SEND, /* send, count elements to peer */
    TETHER__MPI_RECV, /* recv, count elements from peer: a message of another length is EMISMATCH */
} tether__mpi_kind;

/* One checked call: buffers valid, dtype/op defined, peer in range (libtether checked them). */
typedef struct tether__mpi_call {
    tether__mpi_kind kind;
    const void *send; /* send == recv: in place (MPI_IN_PLACE) */
    void *recv;
    size_t count; /* elements; more than INT_MAX is EINVAL (MPI counts are int) */
    tether_dtype dtype;
    tether_op op;
    int peer;    /* broadcast: root; send/recv: the other rank (recv: or TETHER_ANY_SOURCE, which is
                    MPI_ANY_SOURCE); else unused */
    int *source; /* recv: where the sender's rank goes (MPI_Status.MPI_SOURCE), or NULL */
} tether__mpi_call;

/* What libtether lends the plugin: its reduction kernels, for the dtypes MPI has no type for
 * (float16, bfloat16: user-defined MPI_Ops call this). dst[i] = dst[i] op src[i]. */
typedef struct tether__mpi_host {
    int (*reduce)(void *dst, const void *src, size_t n, tether_dtype dt, tether_op op);
} tether__mpi_host;

typedef struct tether__mpi_plugin {
    int abi;               /* TETHER__MPI_PLUGIN_ABI of the plugin's build */
    const char *built_for; /* the MPI of mpi.h at build time, e.g. "Open MPI 4.1.4" */

    /* What the loaded MPI library says it is (MPI_Get_library_version, first line); callable
     * before init. */
    void (*library)(char *buf, size_t len);

    /* Initialise MPI (MPI_THREAD_MULTIPLE asked; an MPI the program initialised itself is used
     * as it is) and return the world's handle, this rank and the size; *multiple = 1 when MPI
     * runs calls from several threads at once (MPI_THREAD_MULTIPLE). */
    int (*init)(const tether__mpi_host *host, void **world, int *rank, int *size, int *multiple,
                char *err, size_t len);

    /* MPI_Comm_split of comm: *child NULL when color < 0. world_ranks gets each member's rank
     * in the world, in child rank order. */
    int (*split)(void *comm, int color, int key, void **child, int *rank, int *size,
                 int *world_ranks, char *err, size_t len);

    /* One call on comm. */
    int (*run)(void *comm, const tether__mpi_call *call, char *err, size_t len);

    /* Release a handle init or split returned. MPI itself is finalised at exit, and only when the
     * plugin initialised it, so a program may form the world again after freeing it. */
    void (*free)(void *comm);
} tether__mpi_plugin;

/* The one exported symbol: the plugin's table, valid for the life of the process. */
typedef const tether__mpi_plugin *(*tether__mpi_plugin_fn)(void);

#endif
