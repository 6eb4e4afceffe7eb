/* tether.h - the whole public API of tether: groups of processes and the collectives between them.
 *
 * Use: tether_init() once, then collectives on the group it returns. A group of size 1 (no
 * configuration in the environment) makes every collective a local copy, so one program runs
 * unchanged on one machine or many. Every function returns TETHER_OK (0) or a negative TETHER_E*
 * code; tether_last_error() then says what failed (file, field, peer, errno) in words.
 *
 * Counts are in elements of the given dtype, never bytes. A group is used by one thread at a time;
 * different groups (a parent and its children too) may be used concurrently from different threads.
 * After a network, peer, timeout or mismatch error the group is broken: every later call on it (and
 * on groups split from the same world) returns that error at once. TETHER_EINVAL from argument
 * checks, and TETHER_ECONFIG from an algorithm setting changed to a malformed value since
 * tether_init (TETHER_ALLREDUCE_ALGO, TETHER_TREE_BELOW: read on every call), are raised before any
 * byte moves and leave the group usable: on that rank the call did not happen, so a retry (once the
 * setting is fixed) is the call the other ranks are in. Only on some ranks, the others wait for
 * that retry, and fail with TETHER_EPEER within seconds if the rank exits instead, or goes on
 * without calling again for a heartbeat (TETHER_HEARTBEAT); live ranks that wait on each other fail
 * with TETHER_EDEADLOCK naming the cycle. A call waits as long as its peers are alive and could
 * still answer it; TETHER_TIMEOUT, when set, bounds any wait (TETHER_ETIMEDOUT).
 */
#ifndef TETHER_H
#define TETHER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TETHER_API __attribute__((visibility("default")))
#else
#define TETHER_API
#endif

#define TETHER_VERSION_MAJOR 0
#define TETHER_VERSION_MINOR 1
#define TETHER_VERSION_PATCH 0
#define TETHER_VERSION_STRING "0.1.0"

/* Status codes, one list: X(name, value, tether_strerror's text). Fixed values, never renumbered.
 * The values of the TETHER_OK... names below, tether_strerror and tether_err_name are all made
 * from it (core/errors.c uses every name of the list, so none lacks its #define). */
/* clang-format off */
#define TETHER_STATUS_LIST(X)                                                                  \
    X(OK, 0, "success")                                                                        \
    /* bad argument (NULL buffer, dtype, op, root or peer out of range) */                     \
    X(EINVAL, -1, "invalid argument")                                                          \
    /* malformed configuration: hostfile, environment variable */                              \
    X(ECONFIG, -2, "malformed configuration")                                                  \
    /* backend not available here (not configured, library missing) */                         \
    X(EUNAVAIL, -3, "backend not available")                                                   \
    /* socket or device error (connect, send, receive) */                                      \
    X(ENET, -4, "network error")                                                               \
    /* nothing finished or moved for TETHER_TIMEOUT seconds */                                 \
    X(ETIMEDOUT, -5, "timed out waiting for peers")                                            \
    /* a peer closed its connection or reported a failure */                                   \
    X(EPEER, -6, "a peer failed or closed its connection")                                     \
    /* ranks called different collectives, counts, dtypes, ops, roots or algorithms */         \
    X(EMISMATCH, -7, "ranks called mismatched collectives")                                    \
    /* out of memory */                                                                        \
    X(ENOMEM, -8, "out of memory")                                                             \
    /* a bug in tether: please report it with TETHER_VERBOSE=1 output */                       \
    X(EINTERNAL, -9, "internal error")                                                         \
    /* live ranks wait on each other and nothing moves: none of them can ever go on */         \
    X(EDEADLOCK, -10, "ranks wait on each other (deadlock)")
/* clang-format on */

/* The list's values, for the names below (use the names). */
#define TETHER_STATUS_VALUE_(name, value, text) TETHER__STATUS_##name = (value),
enum tether__status_value { TETHER_STATUS_LIST(TETHER_STATUS_VALUE_) };
#undef TETHER_STATUS_VALUE_

/* What every function returns: plain int constants, in C++ too. */
#define TETHER_OK ((int)TETHER__STATUS_OK)
#define TETHER_EINVAL ((int)TETHER__STATUS_EINVAL)
#define TETHER_ECONFIG ((int)TETHER__STATUS_ECONFIG)
#define TETHER_EUNAVAIL ((int)TETHER__STATUS_EUNAVAIL)
#define TETHER_ENET ((int)TETHER__STATUS_ENET)
#define TETHER_ETIMEDOUT ((int)TETHER__STATUS_ETIMEDOUT)
#define TETHER_EPEER ((int)TETHER__STATUS_EPEER)
#define TETHER_EMISMATCH ((int)TETHER__STATUS_EMISMATCH)
#define TETHER_ENOMEM ((int)TETHER__STATUS_ENOMEM)
#define TETHER_EINTERNAL ((int)TETHER__STATUS_EINTERNAL)
#define TETHER_EDEADLOCK ((int)TETHER__STATUS_EDEADLOCK)

typedef struct tether_group tether_group;

typedef enum {
    TETHER_BOOL,
    TETHER_INT8,
    TETHER_UINT8,
    TETHER_INT16,
    TETHER_UINT16,
    TETHER_INT32,
    TETHER_UINT32,
    TETHER_INT64,
    TETHER_UINT64,
    TETHER_FLOAT16,
    TETHER_BFLOAT16,
    TETHER_FLOAT32,
    TETHER_FLOAT64,
    TETHER_COMPLEX64,
    TETHER_DTYPE_COUNT /* not a dtype: the number of dtypes */
} tether_dtype;

/* Reductions. bool: SUM and MAX are OR, PROD and MIN are AND. complex64: SUM and PROD only.
 * float16/bfloat16 accumulate in float32 and round to nearest even. Floats: a NaN anywhere gives
 * the canonical NaN (quiet, positive, no payload), and of -0 and +0 MAX gives +0 and MIN -0, so
 * every rank gets the same bits whatever order an algorithm reduces in. */
typedef enum { TETHER_SUM, TETHER_PROD, TETHER_MAX, TETHER_MIN, TETHER_OP_COUNT } tether_op;

/* Form the group this process belongs to.
 * backend: "any", "mpi", "ring", "mesh", "rdma" or "singleton" ("jaccl" and "jaccl-ring", MLX's
 * names, mean rdma); unknown -> TETHER_EINVAL. TETHER_BACKEND in the environment replaces "any".
 * "any" takes the first backend whose configuration is present and whose libraries load, in the
 * order mpi (only under an MPI launcher such as mpirun, through the MPI plugin: docs/mpi.md), rdma,
 * mesh, ring, except that MLX's MLX_HOSTFILE (without TETHER_HOSTFILE) puts ring first, as in MLX.
 * With no configuration at all, strict=0 gives a size-1 group and strict=1 returns
 * TETHER_EUNAVAIL naming what each backend lacked. A configuration that is present but broken is
 * always an error (TETHER_ECONFIG, TETHER_ENET, TETHER_ETIMEDOUT), never size 1; so is a job that
 * rank and size variables announce with no hostfile or coordinator to reach it (TETHER_ECONFIG
 * naming what is set and what is missing; docs/guide.md says which variables announce one: not
 * torchrun's RANK or MASTER_ADDR alone; a size of 1 is the singleton). One exception, kept for
 * MPI launchers (docs/mpi.md): under one whose plugin does not load, "any" with strict=0 warns on
 * stderr and gives size 1 (never quietly; tests/mpi's noplugin case holds it).
 * On success *out owns the group; free it with tether_group_free(). */
TETHER_API int tether_init(const char *backend, int strict, tether_group **out);

/* 1 if the named backend could form a group here (its configuration is present and its libraries
 * load), else 0 and tether_last_error() says why (e.g. a build without RDMA, or TETHER_IBV_DEVICES
 * unset). "singleton" is always available; NULL asks about "any", as MLX's is_available(). */
TETHER_API int tether_is_available(const char *backend);

/* This process's rank in g (0..size-1), and the number of ranks. */
TETHER_API int tether_group_rank(const tether_group *g);
TETHER_API int tether_group_size(const tether_group *g);

/* "mpi", "mesh", "ring", "rdma" or "singleton": the transport the group runs on. */
TETHER_API const char *tether_group_backend(const tether_group *g);

/* Collective: every rank of g calls it. Ranks with the same color form one new group, ordered by
 * key then parent rank (key < 0 keeps parent order). A rank passing color < 0 joins no group and
 * gets *out = NULL (MPI_UNDEFINED). The child shares the parent's connections; freeing it leaves
 * the parent working. Returns the codes of a collective. */
TETHER_API int tether_group_split(tether_group *g, int color, int key, tether_group **out);

/* Collective over the listed ranks only: a group of the n parent ranks in ranks (distinct, this
 * rank among them), in that order (new rank i is ranks[i]). Ranks not listed do not call it. Every
 * listed rank passes the same list; the k-th call with one list on a world forms the same group on
 * every member, so several groups may be formed in any interleaving. Waits until every member
 * called it (a member that listed other ranks waits in another group: TETHER_EDEADLOCK). Like a
 * split child it shares the parent's connections, and it may be called while another thread uses
 * the parent. A rank not in ranks, a repeat or an out-of-range rank: TETHER_EINVAL. */
TETHER_API int tether_group_create(tether_group *g, const int *ranks, int n, tether_group **out);

/* Free a group (NULL is fine). Children must be freed too; the connections close with the last.
 *
 * A group belongs to the process that formed it. A child made by fork() inherits a copy that shares
 * the parent's sockets but not its threads: there every call taking the group (or one of its
 * requests) returns TETHER_EINVAL, whose message names the fork, and tether_group_free does
 * nothing, so the parent's connections stay open and its groups keep working (the child's copy is
 * reclaimed when it exits or execs). tether_group_rank, _size and _backend still answer. */
TETHER_API void tether_group_free(tether_group *g);

/* Bytes per element of dt, 0 for an invalid dtype. */
TETHER_API size_t tether_dtype_size(tether_dtype dt);

/* Lower-case names: of a dtype as numpy spells it ("float32", "bfloat16"), of an op ("sum"); NULL
 * for a value out of range. Bindings build their tables from them, never from enum positions. */
TETHER_API const char *tether_dtype_name(int dtype);
TETHER_API const char *tether_op_name(int op);

/* Short text of a status code ("connection to a peer failed"), and its name ("TETHER_ENET"). */
TETHER_API const char *tether_strerror(int status);
TETHER_API const char *tether_err_name(int status);

/* What the last failing call of this thread said: the first failure of that call, with the file,
 * field, peer and errno that explain it. Empty after a call that succeeded. */
TETHER_API const char *tether_last_error(void);

/* Element-wise reduction of every rank's send into every rank's recv (count elements each).
 * In place when send == recv; any other overlap of send and recv is TETHER_EINVAL (as in every
 * collective with both: only the in-place form named for each may overlap). */
TETHER_API int tether_all_reduce(tether_group *g, const void *send, void *recv, size_t count,
                                 tether_dtype dt, tether_op op);

/* Every rank's count elements, concatenated in rank order into recv (count * size elements).
 * In place when send is this rank's block of recv (recv + rank * count elements). */
TETHER_API int tether_all_gather(tether_group *g, const void *send, void *recv, size_t count,
                                 tether_dtype dt);

/* Reduce send (recv_count * size elements) across ranks; rank r gets block r in recv. In place
 * when recv is this rank's block of send (send + rank * recv_count elements). */
TETHER_API int tether_reduce_scatter(tether_group *g, const void *send, void *recv,
                                     size_t recv_count, tether_dtype dt, tether_op op);

/* Copy root's buf (count elements) into every other rank's buf. The data flows from the root only:
 * a rank that receives it from a rank that called otherwise (another root, count or dtype) fails
 * with TETHER_EMISMATCH; one that receives nothing from such a rank (the root) may return
 * TETHER_OK, and its next collective on g that meets that rank fails (docs/guide.md, "Mismatched
 * calls"). */
TETHER_API int tether_broadcast(tether_group *g, void *buf, size_t count, tether_dtype dt,
                                int root);

/* Block j (count_per_peer elements) of send goes to rank j; block i of recv came from rank i.
 * send and recv hold count_per_peer * size elements and must not overlap. */
TETHER_API int tether_all_to_all(tether_group *g, const void *send, void *recv,
                                 size_t count_per_peer, tether_dtype dt);

/* src of a receive that takes the next message of its tag from whichever rank sent one
 * (MPI_ANY_SOURCE). Each sender's messages of one tag still arrive in the order sent; senders
 * with messages waiting take turns (round robin), so a busy one cannot starve the others. The
 * size check applies as for a directed receive (a sender whose count or dtype differs: as for
 * tether_send below). A directed receive posted while an any-source receive of the
 * same tag waits takes its sender's next message first (a message is matched when it is claimed,
 * not when a receive is posted). In a group of size 1 there is nobody to receive from:
 * TETHER_EINVAL. */
#define TETHER_ANY_SOURCE (-2)

/* Point to point, between any two ranks. Messages between a pair arrive in the order sent; the
 * receiver's count and dtype must match the sender's. The receiver finds a mismatch: its receive
 * fails with TETHER_EMISMATCH and its group breaks. The sender learns of it from the receiver's
 * report, so a send still in flight fails with TETHER_EMISMATCH too, but a small send may have
 * returned TETHER_OK before the receiver looked. Then (mesh, ring, rdma) the sender's next call
 * that waits on that peer (a receive, a collective), and over mesh and ring its next send to it
 * once the report has arrived, fail with TETHER_EMISMATCH and break its group; sends made before
 * the report arrived may still have returned TETHER_OK. The mpi backend cannot tell the sender
 * (MPI_Send has no such error): the receiver's error is the only one.
 * tether_send may return before the peer has received; a message larger than the socket buffers
 * may also wait until the peer posts the matching tether_recv (two ranks that both send first still
 * complete, a little more slowly). dst/src == own rank -> TETHER_EINVAL; src may be
 * TETHER_ANY_SOURCE. These are tether_isend and tether_irecv with tag 0, then tether_wait (the mpi
 * backend runs them as MPI_Send and MPI_Recv). */
TETHER_API int tether_send(tether_group *g, const void *buf, size_t count, tether_dtype dt,
                           int dst);
TETHER_API int tether_recv(tether_group *g, void *buf, size_t count, tether_dtype dt, int src);

/* tether_recv that also stores the rank the message came from in *source (may be NULL; for a
 * directed receive that is src): what MPI_Status.MPI_SOURCE and recvfrom() report. */
TETHER_API int tether_recv_from(tether_group *g, void *buf, size_t count, tether_dtype dt, int src,
                                int *source);

/* A point-to-point request in flight (tether_isend, tether_irecv). */
typedef struct tether_request tether_request;

/* Non-blocking, tagged point to point: post the message and return at once with *req. tag >= 0.
 * Messages between a pair with the same tag match in the order sent; messages with different tags
 * match independently, so a receive of tag 2 completes while an earlier message of tag 1 waits for
 * its own receive. Any number of requests may be in flight on a group, and each completes as soon
 * as its peer allows: two ranks that each post a receive before their send both complete. buf must
 * stay valid and unchanged (a receive's: unread) until the request completes. Every request must
 * be completed with tether_test, tether_wait or tether_waitsome, which free it; a group must not
 * be freed with requests in flight. The checks of tether_send apply; TETHER_EINVAL leaves no
 * request. Requests are used by the thread that uses their group. */
TETHER_API int tether_isend(tether_group *g, const void *buf, size_t count, tether_dtype dt,
                            int dst, int tag, tether_request **req);
TETHER_API int tether_irecv(tether_group *g, void *buf, size_t count, tether_dtype dt, int src,
                            int tag, tether_request **req);

/* tether_irecv that stores the sender's group rank in *source (may be NULL) when the receive
 * completes, before tether_test, tether_wait or tether_waitsome report it done; *source must stay
 * valid until then. With src = TETHER_ANY_SOURCE the request claims a message when one of its tag
 * has arrived from some rank; until then it holds no message, and a sender that dies or a
 * connection that fails meanwhile fails it (the group breaks, as after any failure); once every
 * rank that could send it has closed normally (freed the world) with no such message left, it
 * fails at once with TETHER_EPEER naming them (mesh, ring; rdma for ranks it links to directly,
 * while a rank its ring mode reaches through others is not known to have closed). Several
 * any-source receives may wait at once; each takes a different message. */
TETHER_API int tether_irecv_from(tether_group *g, void *buf, size_t count, tether_dtype dt, int src,
                                 int tag, int *source, tether_request **req);

/* Make what progress is possible without blocking; *done = 1 when req completed (req is freed).
 * An error also frees req and breaks the group, as a failed collective does. */
TETHER_API int tether_test(tether_request *req, int *done);

/* Block until req completes, then free it; TETHER_EDEADLOCK when its peer waits on this rank too,
 * TETHER_ETIMEDOUT after TETHER_TIMEOUT (when set) without progress (the group is then broken, as
 * after any failure). */
TETHER_API int tether_wait(tether_request *req);

/* Wait until at least one of the n requests completes, or timeout_ms passes (0: test each once).
 * NULL entries are skipped; completed requests are freed and their entries set to NULL; *completed
 * (may be NULL) says how many. Returns the first error met (that entry is freed and set to NULL).
 * While it sleeps, the heartbeats say this rank waits in the first pending request's call, so
 * polling in short slices is seen as waiting: ranks that wait on each other fail that request
 * with TETHER_EDEADLOCK, a wait on a rank that failed its last call with TETHER_EPEER, and a peer
 * that stops answering heartbeats fails it too, as in tether_wait (there is no TETHER_TIMEOUT:
 * the caller decides how long to call again). Every request must belong to groups of one world. */
TETHER_API int tether_waitsome(tether_request **reqs, int n, int timeout_ms, int *completed);

/* Withdraw a receive posted with tether_irecv or tether_irecv_from that has not met its message
 * yet (MPI_Cancel, with MPI_Test_cancelled's answer in *cancelled). *cancelled = 1: the receive is
 * gone and req is freed (not to be completed); it took no message, and the message it would have
 * taken goes to the next receive posted for its sender and tag. *cancelled = 0: nothing changed,
 * and req must still be completed with tether_test, tether_wait or tether_waitsome as usual;
 * that is the answer for a send, a receive whose message has begun to arrive or arrived, and a
 * directed receive posted before another receive of the same sender and tag that is still in
 * flight (the later one already waits for the next message in order). An any-source receive that
 * has claimed no message can always be withdrawn. Mesh, ring and rdma; requests do not exist on
 * the mpi backend. Returns TETHER_OK, TETHER_EINVAL for a NULL argument, or the group's error
 * (req is then freed and the group broken, as by tether_test). */
TETHER_API int tether_cancel(tether_request *req, int *cancelled);

/* Returns once every rank of g has entered the barrier. */
TETHER_API int tether_barrier(tether_group *g);

#ifdef __cplusplus
}
#endif

#endif /* TETHER_H */
