/* backends/tcp/engine_impl.h - the engine's private structures and inline helpers. Each file's
 * calls are declared in a header named after it (engine_rx.h for engine_rx.c; engine.c's in
 * engine_core.h, engine.h being the engine's face for mesh and ring), which includes this.
 *
 * Private to the engine's own files (engine*.c), as those headers are. Its two halves call each
 * other: the send and request side (engine.c) and the receive side (engine_rx.c). Beneath them,
 * each calling only those after it: the lanes of pairs with several links (engine_lane.c: stream
 * counts, acks, failover through a live link), with the flush of every link; a link's queue
 * written into its socket or ring (engine_write.c); what a lane's sender keeps until acknowledged
 * (engine_kept.c); breaking the endpoint, every link forgetting what it holds (engine_break.c).
 * The rings of pairs on one host (engine_shm.c) call none of them. The other files only call down
 * into them, in this order: control frames (engine_ctrl.c: abort, bye) and heartbeats
 * (engine_beat.c); waiting and the progress thread's handler (engine_wait.c); opening
 * (engine_open.c) and closing (engine_close.c); the thread that dials lanes that left again
 * (engine_rejoin.c), which hands a new socket to engine_lane.c and is woken through ep->lane_out.
 * The helpers the engine calls (cma.h, route.h, backends/net/) never include this header and never
 * call the engine: they return what to do. Routed messages (route.h) move a chunk at a time: a rank
 * on the way holds the chunks it has read and not yet written (tether__fwd, bounded by
 * TETHER__PASS_MAX per onward link), the destination joins them into one message (RX_CHUNK,
 * joining). */
#ifndef TETHER_TCP_ENGINE_IMPL_H
#define TETHER_TCP_ENGINE_IMPL_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "backends/net/endpoint.h"
#include "backends/net/frame.h"
#include "backends/net/loop.h"
#include "cma.h"
#include "core/heartbeat.h"
#include "engine.h"
#include "route.h"
#include "shm_ring.h"

/* Bytes read ahead per link: a header and a small payload (often several) per recv; a header
 * alone where the receive posted first brings at least this much (engine_rx.c). */
#define TETHER__RBUF_SIZE (64u << 10)
/* A half-sent frame with more than this left is not finished after a break (engine_break.c) or for
 * a control frame (engine_ctrl.c): the link is cut instead. */
#define TETHER__TAIL_MAX (4u << 20)
/* Payload left to read from which a recv goes straight into the destination buffer. */
#define TETHER__DIRECT_MIN (16u << 10)
/* Back-pressure on routed chunks passing through (frame.h): while a link holds this many bytes of
 * them not yet written, the neighbour links they come from are not read (the bytes wait in the
 * socket and TCP's flow control holds their sender back), so a rank on the way holds a few chunks
 * per direction whatever the messages' size, and a slow onward link slows the incoming one instead
 * of filling memory. A rank's own messages do not count: a ring where every rank passes traffic
 * the same way round (n >= 5) could otherwise stall all at once, each waiting for the next to
 * read. So chunks passing through go out before the rank's own frames not yet begun
 * (tether__tcp_tx_queue): a held link then drains as soon as its peer reads, and streams
 * that all pass the same way round (n >= 5, tests/ring routed_cycle) no longer hold every rank at
 * once. Should the onward link take no byte for TETHER__PASS_STALL_MS all the same (its peer
 * stopped, or some cycle of held links), the link may hold one chunk (TETHER__ROUTE_CHUNK) more per
 * such stall, until it is below TETHER__PASS_MAX again: the rank reads that much, which frees room
 * behind it, and what it holds grows by a chunk per stall, not by whatever arrives meanwhile
 * (measured: docs/perf/notes.md, backends/tcp/engine_impl.h). */
#define TETHER__PASS_MAX ((uint64_t)2 << 20)
#define TETHER__PASS_STALL_MS 200
/* Unexpected payload an endpoint's progress thread reads while the program is away (engine_rx.c's
 * unexpected_room). It reads every link as bytes come, for the routed frames, so a large message
 * whose receive came late was held whole (255 MiB of 256 on the ring's rank 1, its receive 2 s
 * late), and so were many small ones; now, once the endpoint holds this much, it stops reading
 * a link between frames or inside such a message: the rest waits in the socket (TCP holds its
 * sender back, as on the mesh) and goes straight into the receive once posted. The program's own
 * calls read on as before (it may wait for what lies behind, and the heartbeats' count with it),
 * so this never holds a rank that waits inside a call; routed frames behind such messages wait
 * until the program is back in a call (measured: docs/perf/notes.md,
 * backends/tcp/engine_impl.h). */
#define TETHER__UNEXPECTED_EAGER ((uint64_t)4 << 20)

/* The most bytes one copy moves with ep->mu held before its thread stands in for the heartbeat
 * thread (engine_beat.c): 8 MiB take a few milliseconds, where the shortest TETHER_HEARTBEAT is
 * 50 ms, and the call that copies costs microseconds. */
#define TETHER__BUSY_STEP ((uint64_t)8 << 20)

/* On pairs with several links (engine_lane.c): frames up to this payload are copied when written,
 * and their request part finishes at once; a larger one's finishes with the peer's ack, which
 * the peer sends as soon as it has consumed the frame. */
#define TETHER__LANE_COPY_MAX ((uint64_t)64 << 10)

/* One-part requests an endpoint keeps for reuse. */
#define TETHER__REQ_SPARES 16

/* One frame on one link's send queue. */
typedef struct tether__txmsg {
    struct tether__txmsg *next;
    unsigned char hdr[TETHER__FRAME_SIZE];
    const unsigned char *payload;
    uint64_t len;            /* payload bytes of this frame */
    uint64_t sent;           /* bytes written, header included */
    struct tether__req *req; /* NULL for an abort or bye frame, which the link owns */
    int passing;             /* a routed chunk passing through: counted in its link's passing */
    int beat;                /* a heartbeat: its payload (wait-state records) is not progress */
    int ack;                 /* an ack (engine_lane.c): outside the lane's stream, like a beat */
    int tunnel;              /* a tunnel frame: counted in its link's tunnel_queued */
    int copy;                /* kept: the copy of a request's frame, counted in its link's copies */
    uint64_t end;            /* kept (engine_lane.c): the lane's position after its last byte */
    int shm_switch;          /* the last frame on the socket: the link's next go in its ring */
    tether__cma_send cma;    /* a descriptor frame (cma.h): what it carries */
} tether__txmsg;

/* What the frame being read on a link is (its payload goes to l->cur). */
typedef enum {
    TETHER__RX_HEADER,  /* none: the next bytes are a header */
    TETHER__RX_DATA,    /* a data frame, for a posted receive or kept as unexpected */
    TETHER__RX_ABORT,   /* an abort frame's reason text */
    TETHER__RX_PASSING, /* a routed chunk passing through, passed on once read */
    TETHER__RX_CHUNK,   /* a routed chunk for this rank: joins its origin's message (joining) */
    TETHER__RX_MEMORY,  /* the payload of a CMA frame (cma.h): an offer or a descriptor */
    TETHER__RX_BEAT,    /* a heartbeat's wait-state records (core/waitstate.h): not progress */
    TETHER__RX_TUNNEL,  /* another lane's stream bytes (engine_lane.c) */
} tether__rx_state;

/* A lane of a pair with several links (engine_lane.c): its own socket, taken out and waiting for
 * the peer's position of it, or carried through a tunnel on another lane of the pair. */
typedef enum { TETHER__LANE_DIRECT, TETHER__LANE_WAIT, TETHER__LANE_TUNNEL } tether__lane_state;

typedef struct tether__link {
    int fd;
    int peer, index, nlinks; /* index among the nlinks sockets to peer */
    tether__txmsg *txhead, *txtail;
    tether__rxq posted;     /* receives waiting for their frame, in posting order */
    tether__rxq unexpected; /* frames that came first, in arrival order */
    tether__rx_state rx;    /* what the frame being read is */
    tether__rxmsg *cur;     /* where its payload goes; NULL between frames */
    struct tether__link
        *chunk_of;          /* RX_CHUNK: the origin's queue-only link, whose message cur is */
    uint64_t chunk_end;     /* RX_CHUNK: cur->got once this chunk is read */
    tether__rxmsg *joining; /* queue-only link: the routed message whose chunks are arriving */
    uint64_t passing;       /* payload bytes of chunks passing through queued here, unwritten */
    int64_t passing_at;     /* when this link last wrote while passing, passing began, or a stall
                               granted pass_extra */
    uint64_t pass_extra;    /* what stalls let it hold beyond TETHER__PASS_MAX */
    int hangup;             /* the peer shut its side: read what is left, held back or not */
    int32_t abort_code;
    int bye;  /* the peer closed normally: its end of stream is no failure */
    int left; /* link 0: the peer's leave notice (route.h) came the way its messages to this rank
                 come, behind all of them: it sends none of its own any more */
    int eof;  /* ...and it came: nothing more to read or poll */
    int held; /* bytes nobody has asked for wait in the socket: not polled for input meanwhile */
    int cut;  /* a break left a frame half sent that was too long to finish: no frame may follow */
    unsigned char *rbuf;
    size_t rlen;                      /* bytes held at the start of rbuf */
    uint64_t bytes_sent, bytes_recvd; /* every byte, heartbeats too: what proves the peer alive */
    /* Payload bytes only (tether__tcp_moved): heartbeats are headers and wait-state records,
     * never counted here, so they never pass for a call's progress. */
    uint64_t payload_sent, payload_recvd;
    tether__cma_link cma; /* cross-memory attach (cma.h): the memory path's, not ours */
    /* The pair's shared-memory rings (engine_shm.c), on a pair's only link between ranks of one
     * host; NULL on every other. Each direction moves from the socket to its ring at the sender's
     * switch frame (shm_tx: ours went out, shm_rx: the peer's came); from then on the socket
     * carries only doorbells, and its end is the peer's. */
    tether__shm *shm;
    int shm_due; /* the offer (higher rank) or its answer (lower rank) has not come yet */
    int shm_tx, shm_rx;
    int shm_bell; /* a doorbell is owed to the peer once our switch frame is out */
    int shm_drop; /* the switch frame came: what follows it in rbuf are doorbells */
    int sock_eof; /* shm_rx: the socket ended (the peer closed or died) */
    /* The peer's TETHER__FRAME_RINGS_ALL: -1 until it came, then its code; rings_due while
     * opening waits for it. */
    int rings_seen, rings_due;
    /* The lane's stream (engine_lane.c), on pairs with several links only: every frame but
     * heartbeats and acks, as bytes written (tx_pos) and consumed by the parser (rx_pos). */
    uint64_t tx_pos, rx_pos;
    uint64_t rx_acked;               /* the position the last ack queued said */
    uint64_t ack_due;                /* a large frame ends here: ack it at once; UINT64_MAX none */
    tether__txmsg *kept, *kept_tail; /* written, not yet acknowledged, in stream order */
    tether__txmsg *ack;              /* the ack queued and not begun: updated in place */
    int awaiting;                    /* kept frames whose request waits for their ack */
    uint64_t copies;                 /* payload bytes of the kept copies of request frames */
    tether__lane_state lane;
    int carrier; /* carries the tunnels of other lanes to its peer: read it all */
    int via;  /* LANE_WAIT/TUNNEL: the lane its tunnel frames go on, for good (if that one is taken
                 out too, they travel inside its stream, so in order) */
    int pump; /* LANE_TUNNEL: the socketpair's other end (fd is this end) */
    int tunnel_of;     /* RX_TUNNEL: the lane whose stream the frame carries */
    unsigned char *in; /* tunnel bytes for this lane not yet written into pump */
    size_t inlen, incap;
    uint64_t tunnel_queued; /* carrier: payload bytes of tunnel frames queued, unwritten */
    uint64_t seen_bytes;    /* bytes arrived on the socket, when the heartbeats last looked */
    int64_t seen_at;        /* when that count last changed */
    /* A lane that comes back (engine_lane.c, engine_rejoin.c). */
    int dialed;        /* this rank opened it at set-up: it dials it again */
    int newfd;         /* a new socket for it, not yet switched to; -1 none */
    int switching;     /* LANE_WAIT: it left the tunnel, its switch frame went out */
    int peer_switched; /* the peer's switch frame came, at peer_switch_pos */
    uint64_t peer_switch_pos;
    unsigned backs;                 /* times it came back */
    uint64_t back_sent, back_recvd; /* bytes_sent and bytes_recvd when it last came back */
} tether__link;

/* A posted send or receive: one part per link of its peer. */
struct tether__req {
    tether__net_live live; /* first: its place among the endpoint's live requests */
    int is_send;
    int peer;
    int parts_left; /* parts not yet finished; 0 = done */
    int nparts;     /* parts it has room for */
    /* A receive on a pair's ring, as its last full test left it (tether__tcp_test): the ring, how
     * far the peer had written into it then, and the quick tests since. Only its owner touches
     * these. */
    const tether__shm *quiet_ring;
    uint64_t quiet_head;
    unsigned quiet_sleeps; /* the endpoint's sleeps then */
    int quiet_polls;
    union {
        tether__txmsg tx;
        tether__rxmsg rx;
    } part[];
};

/* A routed chunk passing through: read into the payload after it, then queued as tx (first, so
 * freeing the frame frees the whole block once sent). */
typedef struct tether__fwd {
    tether__txmsg tx;
    tether__rxmsg rx;
} tether__fwd;

struct tether__tcp_ep {
    pthread_mutex_t mu;
    const char *backend;
    int rank, size;
    tether__link **links; /* per peer: its nlinks[peer] links, or one queue-only link (fd -1) for a
                             peer reached through another (route.h) */
    int *nlinks;
    tether__link **flat; /* every socket link, for poll; then the nvirt queue-only links */
    int nflat, nvirt;
    tether__routes routes; /* which neighbour a message to an unlinked peer goes through */
    char (*addr)[TETHER__ADDR_TEXT]; /* per peer, for messages */
    tether__net_live *live;          /* the live requests, freed by close() */
    /* Freed one-part requests kept for the next (the most a call posts at once on small messages):
     * a malloc of one was a fifth of a small all-reduce's instructions. */
    struct tether__req *spare[TETHER__REQ_SPARES];
    int nspare;
    /* Sleeps in tether__tcp_wait so far: a receive's quick tests (tether__tcp_test) stop at the
     * next, for what its peer wrote meanwhile may have been read without moving anything the
     * quick test looks at. */
    atomic_uint sleeps;
    tether__rxcache rxcache; /* blocks for unexpected frames */
    uint64_t max_io;
    uint64_t cma_min;      /* TETHER_TCP_CMA_MIN: 0 = off */
    uint64_t shm_cap;      /* TETHER_SHM_RING, bytes per direction of a pair's rings: 0 = off */
    uint64_t shm_cma_min;  /* the same on pairs with rings, 0 = never (tether__tcp_read_min) */
    uint64_t shm_copy_min; /* the same for messages only copied (TETHER__STEP_COPY) */
    int one_host;   /* every socket link joins two processes of this host (tether__net_same_host) */
    int peers_here; /* peers whose link joins them to this host */
    int rings_all;  /* every pair of the job has rings: agreed at opening (engine_wait.c) */
    size_t packet;  /* payload bytes one segment carries on every socket link (0: unknown) */
    int err;        /* sticky status, 0 while healthy */
    char errmsg[TETHER__ERRMSG_MAX];
    int aborted;
    uint64_t events;    /* request parts finished, messages kept unexpected (what an any-source
                           receive waits for), leave notices, breaks: what wait() waits for */
    tether__loop *loop; /* the progress thread (engine_wait.c), NULL when none runs */
    int propagated;     /* the progress thread passed the break on to every neighbour */
    /* The program's threads move the bytes themselves while they are inside calls (engine_wait.c):
     * calls counts their isend, irecv, test and wait calls, calls_seen is the count the progress
     * thread saw last, drivers the threads asleep in wait()'s own poll() now. */
    uint64_t calls, calls_seen;
    int drivers;
    int standing_by; /* the thread watches only its wake pipe now: no kick is needed for room */
    tether__heartbeat *beat; /* the heartbeats (engine_beat.c), NULL when none run */
    /* engine_beat.c's stand-in for its thread, called between the TETHER__BUSY_STEP parts of a
     * long copy with mu held (the thread waits for mu meanwhile); NULL when no heartbeats run.
     * A pointer, not a call: the engine's halves call into engine_beat.c, never back. */
    void (*stand_in)(void *ep);
    uint64_t moved;              /* the most tether__tcp_moved has returned: it never goes back */
    tether__net_records records; /* what the heartbeats carry (engine_beat.c) */
    tether__passed *passed;      /* judges stale messages (core/passed.h); NULL: none judged */
    tether__passed_seen seen;    /* when the kept messages were last looked at */
    uint64_t recvs;              /* receives posted so far */
    int beat_ms;                 /* TETHER_HEARTBEAT; 0: no heartbeats */
    /* Lanes that come back (engine_rejoin.c), NULL on endpoints without pairs of several links.
     * lane_out: a lane left (engine_lane.c calls it, with ep->mu held, so that its thread dials or
     * accepts again); a pointer, not a call, as stand_in. */
    struct tether__tcp_rejoin *rejoin;
    void (*lane_out)(tether__tcp_ep *ep);
};

/* One part of r finished (a wait may return). Caller holds ep->mu. */
static inline void tether__tcp_part_done(tether__tcp_ep *ep, struct tether__req *r)
{
    r->parts_left--;
    ep->events++;
}

/* 1 if what is left of t to send, header and payload, is at most TETHER__TAIL_MAX: a half-sent
 * frame that may still be finished after a break or before a control frame. */
static inline int tether__tcp_tail_fits(const tether__txmsg *t)
{
    return TETHER__FRAME_SIZE + t->len - t->sent <= TETHER__TAIL_MAX;
}

/* Messages from this size go by descriptor (cma.h) between a pair whose link 0 has rings, or not
 * (rings), the message's tag saying whether its receiver only copies it (TETHER__STEP_COPY): the
 * endpoint's TETHER_TCP_CMA_MIN, or where the pair has rings and the variable is unset, never
 * (0) while each rank of this host has a CPU of its own, and where they outnumber its CPUs
 * (core/host.h) from TETHER__SHM_COPY_MIN for a message only copied, from TETHER__SHM_CMA_MIN for
 * one a reduction reads. On CPUs of their own the ring's two copies run at once, a piece apart
 * (shm_ring.h), and beat the one copy of a read of the sender's memory at every size; on shared
 * CPUs they take turns, and the one copy wins from 1 MiB for a copy, while a reduction still
 * gains from the ring's bytes in the cache up to a few MiB. One host, 2 CPUs: N = 2, rings
 * against reads from 4 MiB, 2 rounds: broadcast 4 MiB 166 against 370-455 us, 16 MiB 1.75-1.82
 * against 3.0-4.3 ms, all-reduce 16 MiB 0.81x, all-gather level; N = 4, reads of copies from 1 MiB
 * against 4 MiB: all-gather 4 MiB 598-698 against 945-2036 us, broadcast 4 MiB 760-817 against
 * 975-2350, while all-reduce 4 MiB was mixed, 1725-2733 against 2058-2149 (measured:
 * docs/perf/notes.md, backends/tcp/engine_impl.h). Each sender picks alone; a receiver takes
 * either. */
#define TETHER__SHM_CMA_MIN ((uint64_t)4 << 20)
#define TETHER__SHM_COPY_MIN ((uint64_t)1 << 20)
static inline uint64_t tether__tcp_read_min(const tether__tcp_ep *ep, int rings, tether__tag tag)
{
    return !rings ? ep->cma_min : tether__tag_copy_only(tag) ? ep->shm_copy_min : ep->shm_cma_min;
}

#endif
