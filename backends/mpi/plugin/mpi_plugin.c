/* backends/mpi/plugin/mpi_plugin.c - the MPI plugin: tether's calls on MPI communicators.
 *
 * Built once per MPI (backends/mpi/CMakeLists.txt) into libtether-mpi-<flavour>.so and dlopened by
 * libtether (backends/mpi/load.c); backends/mpi/plugin.h is its whole interface. Each tether call
 * is one MPI call on the group's communicator, so the site's MPI picks the algorithm and the
 * network. Every communicator returns errors (MPI_ERRORS_RETURN) instead of aborting, and an error
 * becomes a tether code with MPI's own string. float16 and bfloat16, which MPI has no type for,
 * travel as 2-byte contiguous types reduced by user-defined ops over libtether's kernels.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "backends/mpi/plugin.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#if defined(OPEN_MPI)
#define BUILT_FOR                                                                                  \
    "Open MPI " STR(OMPI_MAJOR_VERSION) "." STR(OMPI_MINOR_VERSION) "." STR(OMPI_RELEASE_VERSION)
#elif defined(MPICH_VERSION)
#define BUILT_FOR "MPICH " MPICH_VERSION
#else
#define BUILT_FOR "an MPI " STR(MPI_VERSION) "." STR(MPI_SUBVERSION) " library"
#endif

#define P2P_TAG 1 /* send/recv: every message of a pair matches in order, as tether promises */

typedef struct plugin_comm {
    MPI_Comm comm;
} plugin_comm;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static const tether__mpi_host *host;
static int half_ready; /* half_type and half_ops exist (MPI handles have no portable zero) */
static MPI_Datatype half_type; /* float16 and bfloat16 elements: 2 bytes each */
static MPI_Op half_ops[2][TETHER_OP_COUNT];

/* User-defined ops for float16 and bfloat16: inout = in op inout through libtether's kernels
 * (float32 accumulation, round to nearest even), as every other backend reduces them. */
#define HALF_OP(name, dt, op)                                                                      \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type)                          \
    {                                                                                              \
        (void)type;                                                                                \
        host->reduce(inout, in, (size_t)*len, dt, op);                                             \
    }
HALF_OP(f16_sum, TETHER_FLOAT16, TETHER_SUM)
HALF_OP(f16_prod, TETHER_FLOAT16, TETHER_PROD)
HALF_OP(f16_max, TETHER_FLOAT16, TETHER_MAX)
HALF_OP(f16_min, TETHER_FLOAT16, TETHER_MIN)
HALF_OP(bf16_sum, TETHER_BFLOAT16, TETHER_SUM)
HALF_OP(bf16_prod, TETHER_BFLOAT16, TETHER_PROD)
HALF_OP(bf16_max, TETHER_BFLOAT16, TETHER_MAX)
HALF_OP(bf16_min, TETHER_BFLOAT16, TETHER_MIN)

static MPI_Datatype mpi_type(tether_dtype dt)
{
    switch (dt) {
    case TETHER_BOOL:
        return MPI_C_BOOL;
    case TETHER_INT8:
        return MPI_INT8_T;
    case TETHER_UINT8:
        return MPI_UINT8_T;
    case TETHER_INT16:
        return MPI_INT16_T;
    case TETHER_UINT16:
        return MPI_UINT16_T;
    case TETHER_INT32:
        return MPI_INT32_T;
    case TETHER_UINT32:
        return MPI_UINT32_T;
    case TETHER_INT64:
        return MPI_INT64_T;
    case TETHER_UINT64:
        return MPI_UINT64_T;
    case TETHER_FLOAT16:
    case TETHER_BFLOAT16:
        return half_type;
    case TETHER_FLOAT32:
        return MPI_FLOAT;
    case TETHER_FLOAT64:
        return MPI_DOUBLE;
    case TETHER_COMPLEX64:
    case TETHER_DTYPE_COUNT:
        break;
    }
    return MPI_C_FLOAT_COMPLEX;
}

/* bool: SUM and MAX are OR, PROD and MIN are AND, as tether defines them. */
static MPI_Op mpi_op(tether_dtype dt, tether_op op)
{
    if (dt == TETHER_BOOL)
        return op == TETHER_SUM || op == TETHER_MAX ? MPI_LOR : MPI_LAND;
    if (dt == TETHER_FLOAT16 || dt == TETHER_BFLOAT16)
        return half_ops[dt == TETHER_BFLOAT16][op];
    switch (op) {
    case TETHER_PROD:
        return MPI_PROD;
    case TETHER_MAX:
        return MPI_MAX;
    case TETHER_MIN:
        return MPI_MIN;
    case TETHER_SUM:
    case TETHER_OP_COUNT:
        break;
    }
    return MPI_SUM;
}

/* The tether code of an MPI error class: a message longer than the receive is the ranks
 * disagreeing; a failed peer (ULFM, MPI 4) is a peer; the rest is the network under MPI. */
static int code_of(int cls)
{
    switch (cls) {
    case MPI_ERR_TRUNCATE:
        return TETHER_EMISMATCH;
    case MPI_ERR_NO_MEM:
        return TETHER_ENOMEM;
    case MPI_ERR_BUFFER:
    case MPI_ERR_COUNT:
    case MPI_ERR_TYPE:
    case MPI_ERR_OP:
    case MPI_ERR_ROOT:
    case MPI_ERR_RANK:
    case MPI_ERR_ARG:
        return TETHER_EINVAL;
#ifdef MPI_ERR_PROC_ABORTED
    case MPI_ERR_PROC_ABORTED:
        return TETHER_EPEER;
#endif
#ifdef MPIX_ERR_PROC_FAILED
    case MPIX_ERR_PROC_FAILED:
        return TETHER_EPEER;
#endif
    default:
        return TETHER_ENET;
    }
}

/* How a message names rank r of comm, as the core's tether__rank_text does: "rank R" where comm
 * spans MPI_COMM_WORLD in its order, else "rank R of this group (world rank W)", the numbers
 * mpirun prints. Into buf; returns buf. */
static const char *rank_text(MPI_Comm comm, int r, char *buf, size_t len)
{
    MPI_Group mine, world;
    int same = MPI_UNEQUAL, w = MPI_UNDEFINED;
    MPI_Comm_compare(comm, MPI_COMM_WORLD, &same);
    if (same == MPI_IDENT || same == MPI_CONGRUENT || r < 0) {
        snprintf(buf, len, "rank %d", r);
        return buf;
    }
    MPI_Comm_group(comm, &mine);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_translate_ranks(mine, 1, &r, world, &w);
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    snprintf(buf, len, "rank %d of this group (world rank %d)", r, w);
    return buf;
}

/* Record an MPI failure of what on comm: the call, this rank, and MPI's own words. */
static int mpi_fail(int rc, const char *what, MPI_Comm comm, char *err, size_t len)
{
    char text[MPI_MAX_ERROR_STRING] = "", who[64];
    int n = 0, cls = MPI_ERR_OTHER, rank = -1, size = 0;
    MPI_Error_string(rc, text, &n);
    MPI_Error_class(rc, &cls);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    snprintf(err, len, "%s failed on %s of %d: %s (MPI error class %d)", what,
             rank_text(comm, rank, who, sizeof who), size, text, cls);
    return code_of(cls);
}

static void plugin_library(char *buf, size_t len)
{
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int n = 0;
    MPI_Get_library_version(text, &n);
    text[strcspn(text, "\n")] = '\0'; /* Open MPI adds the release date and repository on line 2 */
    snprintf(buf, len, "%s", text);
}

/* Called by MPI_Finalize (an attribute of MPI_COMM_SELF is deleted first thing, MPI 3.1 8.7.1),
 * whoever calls it: the type and ops go back before MPI checks for leaked handles. */
static int free_half_at_finalize(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)value, (void)extra;
    for (int d = 0; d < 2; d++)
        for (int op = 0; op < TETHER_OP_COUNT; op++)
            MPI_Op_free(&half_ops[d][op]);
    MPI_Type_free(&half_type);
    half_ready = 0;
    return MPI_SUCCESS;
}

static pid_t mpi_owner; /* the process that started MPI */

/* In that process only: a forked child that exits inherits the handler, and finalising there
 * would act on the parent's MPI job. */
static void finalize_at_exit(void)
{
    if (getpid() != mpi_owner)
        return;
    int done = 0;
    MPI_Finalized(&done);
    if (!done)
        MPI_Finalize();
}

/* MPI itself, once per process: initialised here unless the program did it, and the types and
 * ops for the 2-byte floats. Called under init_lock. */
static int start_mpi(char *err, size_t len)
{
    int started = 0, finished = 0, provided = 0;
    MPI_Finalized(&finished);
    if (finished) {
        snprintf(err, len,
                 "MPI was finalised already in this process (MPI_Finalize): it cannot "
                 "start again");
        return TETHER_EUNAVAIL;
    }
    MPI_Initialized(&started);
    if (!started) {
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) { /* no other MPI call is defined now, not even its error string */
            snprintf(err, len, "MPI_Init_thread failed with error %d", rc);
            return TETHER_EUNAVAIL;
        }
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        mpi_owner = getpid();
        atexit(finalize_at_exit);
    }
    if (half_ready)
        return TETHER_OK;
    static MPI_User_function *const fns[2][TETHER_OP_COUNT] = {
        {f16_sum, f16_prod, f16_max, f16_min}, {bf16_sum, bf16_prod, bf16_max, bf16_min}};
    MPI_Datatype t;
    int rc = MPI_Type_contiguous(2, MPI_BYTE, &t);
    if (rc == MPI_SUCCESS)
        rc = MPI_Type_commit(&t);
    for (int d = 0; d < 2 && rc == MPI_SUCCESS; d++)
        for (int op = 0; op < TETHER_OP_COUNT && rc == MPI_SUCCESS; op++)
            rc = MPI_Op_create(fns[d][op], 1, &half_ops[d][op]);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "creating the float16 type and ops", MPI_COMM_WORLD, err, len);
    half_type = t;
    half_ready = 1;
    int key;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_half_at_finalize, &key, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, key, NULL);
    return TETHER_OK;
}

static int wrap(MPI_Comm comm, void **out, char *err, size_t len)
{
    plugin_comm *p = malloc(sizeof *p);
    if (!p) {
        MPI_Comm_free(&comm);
        snprintf(err, len, "out of memory for a communicator handle");
        return TETHER_ENOMEM;
    }
    p->comm = comm;
    *out = p;
    return TETHER_OK;
}

static int plugin_init(const tether__mpi_host *h, void **world, int *rank, int *size, int *multiple,
                       char *err, size_t len)
{
    pthread_mutex_lock(&init_lock);
    host = h;
    int rc = start_mpi(err, len);
    pthread_mutex_unlock(&init_lock);
    if (rc < 0)
        return rc;
    /* The world's own communicator: the program's traffic on MPI_COMM_WORLD never meets ours. */
    MPI_Comm comm;
    int mrc = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (mrc != MPI_SUCCESS)
        return mpi_fail(mrc, "MPI_Comm_dup of MPI_COMM_WORLD", MPI_COMM_WORLD, err, len);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, rank);
    MPI_Comm_size(comm, size);
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    *multiple = level == MPI_THREAD_MULTIPLE;
    return wrap(comm, world, err, len);
}

/* Each member's rank in MPI_COMM_WORLD, in comm's rank order. */
static int world_ranks_of(MPI_Comm comm, int size, int *out, char *err, size_t len)
{
    MPI_Group mine, world;
    int *ranks = malloc(sizeof *ranks * (size_t)size);
    if (!ranks) {
        snprintf(err, len, "out of memory for %d ranks", size);
        return TETHER_ENOMEM;
    }
    for (int i = 0; i < size; i++)
        ranks[i] = i;
    MPI_Comm_group(comm, &mine);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int rc = MPI_Group_translate_ranks(mine, size, ranks, world, out);
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    free(ranks);
    return rc == MPI_SUCCESS ? TETHER_OK
                             : mpi_fail(rc, "MPI_Group_translate_ranks", comm, err, len);
}

static int plugin_split(void *parent, int color, int key, void **child, int *rank, int *size,
                        int *world_ranks, char *err, size_t len)
{
    MPI_Comm pc = ((plugin_comm *)parent)->comm, comm;
    int prank = 0;
    MPI_Comm_rank(pc, &prank);
    *child = NULL;
    /* key < 0 keeps parent order, as tether_group_split promises; MPI breaks ties by parent rank */
    int rc = MPI_Comm_split(pc, color < 0 ? MPI_UNDEFINED : color, key < 0 ? prank : key, &comm);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Comm_split", pc, err, len);
    if (comm == MPI_COMM_NULL)
        return TETHER_OK;
    MPI_Comm_rank(comm, rank);
    MPI_Comm_size(comm, size);
    int trc = world_ranks_of(comm, *size, world_ranks, err, len);
    if (trc < 0) {
        MPI_Comm_free(&comm);
        return trc;
    }
    return wrap(comm, child, err, len);
}

/* Receive exactly count elements from peer (TETHER_ANY_SOURCE: MPI_ANY_SOURCE) and report the
 * sender: a shorter message is the ranks disagreeing, as a longer one (MPI_ERR_TRUNCATE) is. */
static int recv_exact(const tether__mpi_call *c, MPI_Datatype t, MPI_Comm comm, char *err,
                      size_t len)
{
    MPI_Status st;
    int from = c->peer == TETHER_ANY_SOURCE ? MPI_ANY_SOURCE : c->peer;
    int got = 0, rc = MPI_Recv(c->recv, (int)c->count, t, from, P2P_TAG, comm, &st);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Recv", comm, err, len);
    MPI_Get_count(&st, t, &got);
    if ((size_t)got == c->count) {
        if (c->source)
            *c->source = st.MPI_SOURCE;
        return TETHER_OK;
    }
    char who[64];
    snprintf(err, len, "tether_recv: %s sent %d elements; this receive expects %zu",
             rank_text(comm, st.MPI_SOURCE, who, sizeof who), got, c->count);
    return TETHER_EMISMATCH;
}

/* Bytes before this rank's block of a buffer of count-element blocks, one per rank: where the
 * in-place forms of all-gather (send in recv) and reduce-scatter (recv in send) put it. */
static size_t own_block(MPI_Comm comm, MPI_Datatype t, size_t count)
{
    int rank = 0, esize = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Type_size(t, &esize);
    return (size_t)rank * count * (size_t)esize;
}

/* Reduce-scatter; in place, recv is this rank's block of send: MPI's in-place form reduces the
 * whole send buffer (which the caller lets tether write) and leaves the result at its start. */
static int reduce_scatter(const tether__mpi_call *c, MPI_Datatype t, MPI_Comm comm)
{
    MPI_Op op = mpi_op(c->dtype, c->op);
    size_t at = own_block(comm, t, c->count);
    if ((const char *)c->recv != (const char *)c->send + at)
        return MPI_Reduce_scatter_block(c->send, c->recv, (int)c->count, t, op, comm);
    int esize = 0,
        rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, (void *)c->send, (int)c->count, t, op, comm);
    MPI_Type_size(t, &esize);
    if (rc == MPI_SUCCESS && at)
        memmove(c->recv, c->send, c->count * (size_t)esize);
    return rc;
}

static int plugin_run(void *handle, const tether__mpi_call *c, char *err, size_t len)
{
    MPI_Comm comm = ((plugin_comm *)handle)->comm;
    if (c->count > INT_MAX) {
        snprintf(err, len,
                 "count %zu is over MPI's limit of %d elements per call (MPI counts are "
                 "int): split the call",
                 c->count, INT_MAX);
        return TETHER_EINVAL;
    }
    int n = (int)c->count, rc = MPI_SUCCESS;
    MPI_Datatype t = mpi_type(c->dtype);
    const char *what = "";
    switch (c->kind) {
    case TETHER__MPI_ALL_REDUCE:
        what = "MPI_Allreduce";
        rc = MPI_Allreduce(c->send == c->recv ? MPI_IN_PLACE : c->send, c->recv, n, t,
                           mpi_op(c->dtype, c->op), comm);
        break;
    case TETHER__MPI_ALL_GATHER: /* in place: this rank's block already sits at its place in recv */
        what = "MPI_Allgather";
        rc = MPI_Allgather(c->send == (const char *)c->recv + own_block(comm, t, c->count)
                               ? MPI_IN_PLACE
                               : c->send,
                           n, t, c->recv, n, t, comm);
        break;
    case TETHER__MPI_REDUCE_SCATTER:
        what = "MPI_Reduce_scatter_block";
        rc = reduce_scatter(c, t, comm);
        break;
    case TETHER__MPI_BROADCAST:
        what = "MPI_Bcast";
        rc = MPI_Bcast(c->recv, n, t, c->peer, comm);
        break;
    case TETHER__MPI_ALL_TO_ALL:
        what = "MPI_Alltoall";
        rc = MPI_Alltoall(c->send, n, t, c->recv, n, t, comm);
        break;
    case TETHER__MPI_BARRIER:
        what = "MPI_Barrier";
        rc = MPI_Barrier(comm);
        break;
    case TETHER__MPI_SEND:
        what = "MPI_Send";
        rc = MPI_Send(c->send, n, t, c->peer, P2P_TAG, comm);
        break;
    case TETHER__MPI_RECV:
        return recv_exact(c, t, comm, err, len);
    }
    return rc == MPI_SUCCESS ? TETHER_OK : mpi_fail(rc, what, comm, err, len);
}

static void plugin_free(void *handle)
{
    plugin_comm *p = handle;
    int done = 0;
    MPI_Finalized(&done);
    if (!done)
        MPI_Comm_free(&p->comm);
    free(p);
}

TETHER_API const tether__mpi_plugin *tether__mpi_plugin_v1(void)
{
    static const tether__mpi_plugin table = {
        .abi = TETHER__MPI_PLUGIN_ABI,
        .built_for = BUILT_FOR,
        .library = plugin_library,
        .init = plugin_init,
        .split = plugin_split,
        .run = plugin_run,
        .free = plugin_free,
    };
    return &table;
}
