/* backends/tcp/engine.h - the TCP message engine: tagged messages over 1..K sockets per peer.
 *
 * It implements the message half of core/transport.h over the links tether__net_setup formed:
 * per-link ordered send queues (a send is written at once when its link is idle), posted and
 * unexpected receives matched per link by (group, seq, step), payloads read straight into the
 * user's buffer when the receive is posted, large messages striped across the links of a peer,
 * and a sticky error that fails every request once a link breaks. One mutex per endpoint makes
 * every call thread-safe; wait() sleeps in poll() on every link, never spins. No single syscall
 * moves more than 1 GiB (TETHER_TCP_MAX_IO lowers it, for tests). */
#ifndef TETHER_TCP_ENGINE_H
#define TETHER_TCP_ENGINE_H

#include "backends/net/setup.h"
#include "core/transport.h"

typedef struct tether__tcp_ep tether__tcp_ep;

/* An endpoint over links (its sockets move into the endpoint and are set to -1 in links).
 * backend names the transport in messages ("mesh"). */
int tether__tcp_ep_create(tether__net_links *links, int rank, const char *backend,
                          tether__tcp_ep **out);

/* The message half of the transport vtable (core/transport.h, with its contracts) for the backends
 * whose endpoint is the engine itself (mesh, ring): ep is a tether__tcp_ep. */
int tether__tcp_isend(tether__ep *ep, int peer, const void *buf, size_t len, tether__tag tag,
                      tether__req **out);
int tether__tcp_irecv(tether__ep *ep, int peer, void *buf, size_t len, tether__tag tag,
                      tether__req **out);
int tether__tcp_post(tether__ep *ep, const tether__post *posts, int n, tether__req **reqs);
int tether__tcp_test(tether__ep *ep, tether__req *r, int *done);
int tether__tcp_wait(tether__ep *ep, int timeout_ms);
void tether__tcp_abort(tether__ep *ep, int code, const char *msg);
/* Bytes that have crossed this endpoint's links so far, counted where the kernel has them: received
 * into its socket buffers and sent from them (any thread). A root whose broadcast still drains from
 * a send buffer over a slow link sees it move while it waits elsewhere. */
uint64_t tether__tcp_moved(tether__ep *ep);
/* Whether a message of tag from peer has arrived that no receive has claimed (1, 0, or the sticky
 * error): the probe of an any-source receive. */
int tether__tcp_probe(tether__ep *ep, int peer, tether__tag tag);
/* Withdraw a receive none of whose parts has met its frame yet (core/transport.h's cancel). */
int tether__tcp_cancel(tether__ep *ep, tether__req *r);
/* The heartbeats' verdict (engine_beat.c): a peer silent for TETHER__HEARTBEATS_MISSED periods
 * breaks the endpoint. */
int tether__tcp_alive(tether__ep *ep);
/* Carry ws in the heartbeats (core/transport.h's watch). */
void tether__tcp_watch(tether__ep *ep, tether__waitstate *ws);
/* Judge stale messages by p (core/transport.h's track). */
void tether__tcp_track(tether__ep *ep, tether__passed *p);

/* Those calls in the initializer of such a backend's vtable. */
#define TETHER__TCP_MESSAGE_OPS                                                                    \
    .isend = tether__tcp_isend, .irecv = tether__tcp_irecv, .post = tether__tcp_post,              \
    .test = tether__tcp_test, .probe = tether__tcp_probe, .cancel = tether__tcp_cancel,            \
    .wait = tether__tcp_wait, .moved = tether__tcp_moved, .alive = tether__tcp_alive,              \
    .abort = tether__tcp_abort, .packet = tether__tcp_packet, .watch = tether__tcp_watch,          \
    .track = tether__tcp_track

void tether__tcp_close(tether__tcp_ep *ep);

/* What the links give the core's algorithms (core/transport.h's caps): TETHER__CAP_DIRECT when
 * every peer has links of its own (a mesh; a ring of 2 or 3 ranks, whose neighbours are everyone);
 * TETHER__CAP_ONE_HOST when every link joins two processes of this host (loopback, or the same
 * address at both ends: links are then memory copies on shared cores and caches, not cables);
 * TETHER__CAP_READS_MEMORY when this rank and every peer read each other's large messages from
 * memory (cma.h), both directions of every pair, which both ends of it know alike;
 * TETHER__CAP_MEMORY_RINGS when every pair of the job has rings in shared memory, which opening
 * has every rank agree on (engine_wait.c). */
unsigned tether__tcp_caps(const tether__ep *ep);
/* core/transport.h's packet: the least TCP segment of the socket links, less a frame header. */
size_t tether__tcp_packet(const tether__ep *ep);

/* For links that reach only some peers (the ring): via[p] is the neighbour through which a message
 * to p goes (p itself when linked). Peers without links then work as if linked, more slowly. */
int tether__tcp_ep_route(tether__tcp_ep *ep, const int *via);

/* A thread that moves bytes, passes routed frames on and spreads a failure to every neighbour while
 * the program is outside tether (backends/net/loop.h: it sleeps in poll(), never spins). From then
 * on wait() sleeps until that thread reports progress. */
int tether__tcp_progress_start(tether__tcp_ep *ep);

/* Stop that thread. linger_ms > 0 (a normal close of a routed endpoint): first tell every rank and
 * keep passing frames on until every rank has said it is closing too, or linger_ms passed, so ranks
 * still finishing their last calls through this one can. */
void tether__tcp_progress_stop(tether__tcp_ep *ep, int linger_ms);

/* Heartbeats (engine_beat.c): a thread that tells every linked peer this rank is alive each
 * period_ms. Stopped by close. */
int tether__tcp_beat_start(tether__tcp_ep *ep, int period_ms);

/* Bytes a link has sent and received (headers included), for TETHER_VERBOSE and striping tests.
 * EINVAL when peer or link does not exist. */
int tether__tcp_link_bytes(tether__tcp_ep *ep, int peer, int link, uint64_t *sent, uint64_t *recvd);

/* Keep the plan and listeners the world formed ep with for ep's lanes that come back
 * (engine_rejoin.c), when some pair has several links: a thread dials or accepts them again; close
 * stops it. They are ep's from then on: *plan is emptied, *nlisten and *listen_fds cleared. */
int tether__tcp_rejoin_start(tether__tcp_ep *ep, tether__net_plan *plan, int *nlisten,
                             int **listen_fds);

#endif
