/* core/transport.h - the transport vtable: the only core header a backend implements.
 *
 * A backend forms the "world" (every process of the job) in open(): it listens, connects to the
 * peers it links to, and checks every new connection with a handshake (magic, version, job token,
 * rank, size). After that the core talks to it only through tagged, non-blocking messages to world
 * ranks: isend/irecv post, test reports completion, wait sleeps until I/O may be possible. Every
 * collective algorithm in core/algo is written once over these calls (NCCL's net plugin shape,
 * with connection set-up folded into open because each backend bootstraps differently).
 *
 * Contracts every backend keeps:
 * - Thread safety: groups split from one world share its endpoint and may be used from different
 *   threads at once, so isend/irecv/test/wait may be called concurrently on one endpoint.
 * - Matching: a message matches the receive posted for the same peer and the same (group, seq,
 *   step). If its sig or length differs from the receive's, that receive and the endpoint fail
 *   with TETHER_EMISMATCH naming both values. A message with no posted receive yet is kept
 *   (unexpected) until one is posted; it also fails with TETHER_EMISMATCH when a receive for the
 *   same (group, seq) but another sig is posted or pending (for TETHER__TAG_P2P seqs: and the same
 *   step, since each user tag, the step, is numbered on its own).
 * - Order: messages between a pair with the same tag match in the order sent.
 * - Errors stick: once a connection fails (EOF, reset, bad frame), the endpoint is broken and every
 *   pending and later request fails with the same code at once; the message (via tether__fail)
 *   names the peer, its address and the errno. abort() breaks it on purpose and tells every peer
 *   so they fail within seconds too (closing the connections is the minimum).
 * - Never a busy loop: wait() blocks in poll() (or a completion channel) at most timeout_ms.
 * - No write into a user buffer after abort() or close() returned.
 */
#ifndef TETHER_CORE_TRANSPORT_H
#define TETHER_CORE_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "errors.h"
#include "log.h"
#include "tag.h"
#include "waitstate.h"

typedef struct tether__ep tether__ep;   /* a backend's endpoint: its connections to the world */
typedef struct tether__req tether__req; /* one posted send or receive, owned by the backend */
struct tether__coll;                    /* one checked call (core/coll.h) */
typedef struct tether__passed tether__passed; /* calls this rank has passed (core/passed.h) */

/* One message of a batch (post()): a send to or a receive from world rank peer. */
typedef struct tether__post {
    int peer;
    int is_send;
    void *buf; /* a send's is only read */
    size_t len;
    tether__tag tag;
} tether__post;

/* caps(): what the links allow, for algorithm choice. */
#define TETHER__CAP_DIRECT                                                                         \
    1u /* a direct link to every peer (full mesh); else only ring neighbours                       \
          are direct and other peers are reached by forwarding */
#define TETHER__CAP_ONE_HOST                                                                       \
    2u /* every rank runs on this host: links are memory copies that share                         \
          its cores and caches, not cables */
/* This rank and every peer read each other's large messages straight from memory: one copy,
 * nothing pipelined through a socket. Every rank must see it alike, since algorithm choices go
 * into the call signature: a backend reports it only from facts both ends of each link share (for
 * TCP, both directions of the pair proved readable), so one rank that cannot read, or a peer in
 * another pid namespace, clears it for every rank. */
#define TETHER__CAP_READS_MEMORY 4u
/* Every pair of ranks has rings in shared memory for its small messages (so every rank is on this
 * host): no system call per message, so algorithms need not save messages at the cost of rounds.
 * Every rank must see it alike: a backend agrees on it among all ranks as it opens. */
#define TETHER__CAP_MEMORY_RINGS 8u

/* probe(): no such message from the peer, and none will come (it closed normally). */
#define TETHER__PROBE_GONE 2

typedef struct tether__transport_ops {
    const char *name; /* "mpi", "mesh", "ring", "rdma" */

    /* 1 if cfg holds this backend's configuration (what "any" looks for); else 0 and why says
     * what is missing, e.g. "TETHER_HOSTFILE and TETHER_COORDINATOR are unset". */
    int (*configured)(const tether__config *cfg, char *why, size_t why_len);

    /* 1 if the backend can run on this machine at all (its libraries load); else 0 and why.
     * On success why may say what was found (tether check prints it). NULL means always usable.
     * The registry asks only a backend that is configured, so nothing is loaded for "any" unless
     * its configuration is present. */
    int (*usable)(char *why, size_t why_len);

    /* Form the world: blocks at most cfg->timeout_ms. Sets *rank and *size. Errors: ECONFIG (bad
     * hostfile or environment, message names file and field), ENET (cannot listen or connect),
     * ETIMEDOUT (peers never came), EPEER (a peer failed the handshake for a reason that is not a
     * stray connection, e.g. another size). */
    int (*open)(const tether__config *cfg, tether__ep **out, int *rank, int *size);

    /* caps() and packet() answer the same from open()'s return to close(): core keeps the
     * choices made from them per group (core/algo/select.c). */
    unsigned (*caps)(const tether__ep *ep);

    /* Optional: payload bytes one packet carries on this endpoint's links (the least of them, the
     * backend's frame header taken off), for algorithm choice; asked only where caps() reports
     * TETHER__CAP_ONE_HOST, whose links look alike from both ends. 0 or NULL: unknown. */
    size_t (*packet)(const tether__ep *ep);

    /* Post a message to / from world rank peer (never self). *out is released by test() once it
     * reports done or an error, or by close(). len may be 0. buf must stay valid until then. */
    int (*isend)(tether__ep *ep, int peer, const void *buf, size_t len, tether__tag tag,
                 tether__req **out);
    int (*irecv)(tether__ep *ep, int peer, void *buf, size_t len, tether__tag tag,
                 tether__req **out);

    /* Optional: post n messages at once, as isend and irecv would one by one in that order
     * (an error stops there, with what was posted before it left posted), in one turn of the
     * endpoint's lock. reqs[i] is posts[i]'s request, or NULL where it finished while posted
     * (released: nothing to test). NULL: core posts them one by one. */
    int (*post)(tether__ep *ep, const tether__post *posts, int n, tether__req **reqs);

    /* Make what progress is possible without blocking, then report: *done = 1 when r completed
     * (r is released). A negative return is the endpoint's sticky error (r is released). */
    int (*test)(tether__ep *ep, tether__req *r, int *done);

    /* Optional (any-source receives, core/p2p.c): make what progress is possible without
     * blocking, as test() does, then return 1 if a message from world rank peer with tag's group,
     * seq and step (any sig: a posted receive then reports the mismatch) has arrived, at least its
     * header, and no receive has claimed it yet; 0 if not; TETHER__PROBE_GONE if not and none
     * can come, since peer closed normally (said bye) after all it sent had arrived (a backend
     * that cannot tell returns 0: the receive then waits); a negative sticky error when the
     * endpoint is broken. It claims nothing: core posts the directed irecv for it next, from the
     * same thread. NULL: the backend offers no any-source receives (TETHER_EUNAVAIL). */
    int (*probe)(tether__ep *ep, int peer, tether__tag tag);

    /* Optional (tether_cancel, core/p2p.c): withdraw receive r if no part of it has been matched
     * to a message yet: 1 when withdrawn (r is released; a message that comes later for its tag
     * is kept as unexpected, for the next receive posted with it), 0 when too late or r is a
     * send (r stays and completes as usual), a negative sticky error when the endpoint is broken
     * (r is released, as by test()). NULL: posted receives cannot be withdrawn. */
    int (*cancel)(tether__ep *ep, tether__req *r);

    /* Sleep until some I/O may be possible or timeout_ms passed (0 = just check). */
    int (*wait)(tether__ep *ep, int timeout_ms);

    /* A counter that changes whenever data moves on the endpoint (bytes, or completed work), read
     * without a lock from any thread; only its changes matter. A wait whose requests have not
     * finished for TETHER_TIMEOUT then still goes on while this moves: a large message on a slow
     * link is progress, not a stalled peer. NULL: only finished requests count (a counter that
     * never moves). */
    uint64_t (*moved)(tether__ep *ep);

    /* Liveness, called by a wait that has made no progress for a heartbeat period: 0 while every
     * linked peer has been heard from (data or a heartbeat, which the endpoint sends every
     * cfg->heartbeat_ms from a thread of its own, so a rank busy outside tether still answers)
     * within TETHER__HEARTBEATS_MISSED periods; else the endpoint breaks (ETIMEDOUT naming the
     * silent peer) and that is returned. Cheap when called often: it looks at most once a
     * period. NULL: no heartbeats, and TETHER_TIMEOUT=0 is refused. */
    int (*alive)(tether__ep *ep);

    /* Optional, with alive(): carry ws in the heartbeats (core/waitstate.h): each heartbeat
     * packs this rank's record (tether__ws_pack: the peers it has requests pending with, its
     * moved() counter) and the others it holds, and a heartbeat that brings records merges them
     * (tether__ws_merge; malformed ones break the endpoint like a bad frame). Called once, right
     * after open(); ws outlives the endpoint. NULL: no wait-state verdicts (a wait goes on). */
    void (*watch)(tether__ep *ep, tether__waitstate *ws);

    /* Optional: judge stale messages by p (core/passed.h). Called once, right after open(); p
     * outlives the endpoint. A collective message that tether__passed_stale calls stale breaks
     * the endpoint with TETHER_EMISMATCH and its text: when it arrives, and when one kept as
     * unexpected is looked at again, at a post once tether__passed_moved says a call is over.
     * NULL: kept messages of calls that are over stay until close(). */
    void (*track)(tether__ep *ep, tether__passed *p);

    /* Break the endpoint with code/msg: fail pending requests, tell peers, close connections. */
    void (*abort)(tether__ep *ep, int code, const char *msg);

    /* Close the endpoint and free it, with every request still pending. */
    void (*close)(tether__ep *ep);

    /* Whole collectives, for a backend that brings its own (MPI: the site's library already has
     * tuned collectives, communicators and its own matching). NULL for the others; when set,
     * isend/irecv/test/wait/moved/caps may be NULL, since core then runs no algorithm of its own.
     * comm is the group's handle from split() (NULL: the world). run() performs one checked call
     * c (kind SEND_RECV: root is the peer's group rank, sending the direction, send = recv = buf)
     * whose signature is sig, and returns a TETHER_E* code with the failure recorded. */
    int (*run)(tether__ep *ep, void *comm, const struct tether__coll *c, uint32_t sig);
    /* Collective over comm's group: this rank's child for color (color < 0: none, *child NULL),
     * its rank and size there, and each member's world rank (world_ranks holds size entries of
     * the parent, enough for any child). */
    int (*split)(tether__ep *ep, void *comm, int color, int key, void **child, int *rank, int *size,
                 int *world_ranks);
    /* Release a handle split() returned. NULL: nothing to release. */
    void (*comm_free)(tether__ep *ep, void *comm);
} tether__transport_ops;

/* The table of backends: defined in backends/table.c, NULL-terminated, in "any" order. */
extern const tether__transport_ops *const tether__backends[];

/* Other names of a backend of the table (MLX's), also in backends/table.c; {NULL, NULL} ends it. */
typedef struct tether__backend_alias {
    const char *alias, *backend;
} tether__backend_alias;
extern const tether__backend_alias tether__backend_aliases[];

#endif
