/* backends/tcp/engine_impl.h - the engine's private structures (engine.c, engine_rx.c). */
#ifndef TETHER_TCP_ENGINE_IMPL_H
#define TETHER_TCP_ENGINE_IMPL_H

#include <poll.h>
#include <pthread.h>

#include "core/heartbeat.h"
#include "engine.h"
#include "backends/net/frame.h"

/* Bytes read ahead per link: a header and a small payload (often several) per recv. */
#define TETHER__RBUF_SIZE (64u << 10)
/* Payload left to read from which a recv goes straight into the destination buffer. */
#define TETHER__DIRECT_MIN (16u << 10)

/* One frame on one link's send queue. */
typedef struct tether__txmsg {
    struct tether__txmsg *next;
    unsigned char hdr[TETHER__FRAME_SIZE];
    const unsigned char *payload;
    uint64_t len;           /* payload bytes of this frame */
    uint64_t sent;          /* bytes written, header included */
    struct tether_req *req; /* NULL for an abort or bye frame, which the link owns */
    /* a descriptor frame (cma.c): the descriptor it carries, its id, the link's CMA_DONE queue */
    unsigned char cma_desc[TETHER__CMA_DESC_SIZE];
    uint64_t cma_id;
    struct tether__txmsg *cma_next;
} tether__txmsg;

typedef struct tether__link {
    int fd;
    int peer, index, nlinks; /* index among the nlinks sockets to peer */
    tether__txmsg *txhead, *txtail;
    tether__rxq posted;     /* receives waiting for their frame, in posting order */
    tether__rxq unexpected; /* frames that came first, in arrival order */
    tether__rxmsg *cur;     /* the frame whose payload is being read, or NULL */
    int cur_abort;          /* cur is an abort frame's reason text */
    int cur_fwd;            /* cur is a routed frame passing through, forwarded once read */
    int32_t abort_code;
    int bye;  /* the peer closed normally: its end of stream is no failure */
    int eof;  /* ...and it came: nothing more to read or poll */
    int held; /* bytes nobody has asked for wait in the socket: not polled for input meanwhile */
    unsigned char *rbuf;
    size_t rlen; /* bytes held at the start of rbuf */
    uint64_t bytes_sent, bytes_recvd;
    /* cross-memory attach with this peer (cma.c); the state is link 0's, the queues each link's */
    int cma_offered;  /* our offer waits for its answer: 2 a real one, 1 an empty one */
    int cma_expected; /* the peer's offer has not come yet */
    int cma_on;       /* the peer reads our memory: large sends go as descriptors */
    int cma_read;     /* we read the peer's memory: its pid and epoch cell are known */
    int64_t cma_pid;
    uint64_t cma_epoch_addr;
    uint64_t cma_next_id;
    tether__txmsg *cma_wait; /* descriptors sent here whose CMA_DONE has not come */
    int cma_unread;          /* unexpected descriptors on this link, not copied yet */
    int cur_cma;             /* cur is the payload of a CMA frame (cma_hdr), read into cma_buf */
    tether__frame cma_hdr;
    tether__rxmsg cma_msg;
    unsigned char cma_buf[TETHER__CMA_OFFER_SIZE];
} tether__link;

/* A posted send or receive: one part per link of its peer. */
struct tether_req {
    struct tether_req *prev, *next; /* the endpoint's live requests, freed by close() */
    int is_send;
    int peer;
    int parts_left; /* parts not yet finished; 0 = done */
    union {
        tether__txmsg tx;
        tether__rxmsg rx;
    } part[];
};

/* A routed frame passing through: read into the payload after it, then queued as tx (first, so
 * freeing the frame frees the whole block once sent). */
typedef struct tether__fwd {
    tether__txmsg tx;
    tether__rxmsg rx;
} tether__fwd;

typedef struct tether__tcp_progress tether__tcp_progress;

struct tether__tcp_ep {
    pthread_mutex_t mu;
    const char *backend;
    int rank, size;
    tether__link **links; /* per peer: its nlinks[peer] links, or one queue-only link (fd -1) for a
                             peer reached through via[peer] */
    int *nlinks;
    tether__link **flat; /* every socket link, for poll; then the nvirt queue-only links */
    int nflat, nvirt;
    int *via; /* per peer: the neighbour a message to it goes through; NULL when all are linked */
    char (*addr)[TETHER__ADDR_TEXT]; /* per peer, for messages */
    struct tether_req *live;
    tether__rxcache rxcache; /* blocks for unexpected frames */
    uint64_t max_io;
    uint64_t cma_min; /* TETHER_TCP_CMA_MIN: 0 = off */
    int one_host; /* every socket link joins two processes of this host (tether__net_same_host) */
    int err;      /* sticky status, 0 while healthy */
    char errmsg[TETHER_ERRMSG_MAX];
    int aborted;
    uint64_t events; /* request parts finished, leave notices, breaks: what wait() waits for */
    int leaves_seen; /* leave notices received (route.c) */
    tether__tcp_progress *prog; /* the progress thread (progress.c), NULL when none runs */
    tether_heartbeat *beat;     /* the heartbeats (heartbeat.c), NULL when none run */
};

/* Break ep (first failure wins): record code and the message, fail every request, forget every
 * queued frame so nothing touches a user buffer again. Returns code. Caller holds ep->mu. */
int tether__tcp_break(tether__tcp_ep *ep, int code, const char *fmt, ...) TETHER_PRINTF(3, 4);

/* EPEER for a message to or from a peer that closed normally. Caller holds ep->mu. */
int tether__tcp_gone(tether__tcp_ep *ep, const tether__link *l, const char *what);

/* Write what l's socket takes of its queue; a failure breaks ep. Caller holds ep->mu. */
int tether__tcp_flush(tether__tcp_ep *ep, tether__link *l);

/* Queue t on l (when not NULL) and write what l's socket takes, without breaking ep when that
 * fails: for a thread writing on its own (heartbeat.c), which must not be the one to report a
 * peer gone (a bye nobody has read yet may explain it); the next call on that peer reports it.
 * Caller holds ep->mu. */
void tether__tcp_nudge(tether__tcp_ep *ep, tether__link *l, tether__txmsg *t);

/* Queue t on l and write what the socket takes at once when l was idle. Caller holds ep->mu. */
int tether__tcp_tx_queue(tether__tcp_ep *ep, tether__link *l, tether__txmsg *t);

/* After poll: move bytes on every socket link that is ready. Caller holds ep->mu. */
void tether__tcp_progress_ready(tether__tcp_ep *ep, const struct pollfd *pfd);

/* Receive side (engine_rx.c), caller holds ep->mu.
 * tether__tcp_read reads what l's socket holds. With all = 0 it stops once no receive is posted on
 * l and no frame is half read: bytes nobody asked for yet stay in the socket, where TCP's flow
 * control holds back the sender, and are read later straight into the receive that claims them.
 * Reading them at once instead meant a heap copy per frame, and a rank that kept draining the next
 * collective's frames before posting its own sends serialised the exchange (docs/perf/analysis.md).
 * all = 1 drains the socket: a hang-up must surface as the peer's error. An endpoint with a
 * progress thread always drains (the thread must pass routed frames on, and it sees only the
 * socket, not frames left in rbuf). */
int tether__tcp_read(tether__tcp_ep *ep, tether__link *l, int all);
/* Whether a receive wants l's bytes: the rule of tether__tcp_read's all = 0. */
int tether__tcp_wants_input(const tether__link *l);
/* The poll events wait() asks of l, and what to do with what poll() said of it (caller holds
 * ep->mu). A link whose bytes nobody wants yet is still polled until input shows up on it, so that
 * a peer that exits is noticed while we wait on another; a peek then tells a closed connection
 * (read, to report it) from bytes that wait for their receive (held: not polled for input until
 * read; on Linux POLLRDHUP still reports the peer's exit meanwhile). */
short tether__tcp_poll_events(const tether__link *l);
int tether__tcp_input_ready(tether__tcp_ep *ep, tether__link *l, short revents);
/* One part of r finished (a wait may return). */
void tether__tcp_part_done(tether__tcp_ep *ep, struct tether_req *r);
int tether__tcp_post_recv(tether__tcp_ep *ep, tether__link *l, struct tether_req *r,
                          tether__rxmsg *part);
void tether__tcp_rx_clear(tether__tcp_ep *ep, tether__link *l);
int tether__tcp_mismatch(tether__tcp_ep *ep, const tether__link *l, const tether__rxmsg *got,
                         tether_tag want, uint64_t want_len);
int tether__tcp_protocol_error(tether__tcp_ep *ep, const tether__link *l, const char *what);
/* l's peer announced len bytes no receive claims, more than tether__rxcache_admits: ENET. */
int tether__tcp_too_long(tether__tcp_ep *ep, const tether__link *l, uint64_t len, tether_tag tag);

/* Routing (route.c), caller holds ep->mu. A message to a peer with no link travels as one routed
 * frame on link 0 of the neighbour via[peer]; a receive from it waits in that peer's queue-only
 * link, where routed frames for this rank are matched as if they had come straight from it. */
int tether__tcp_route_send(tether__tcp_ep *ep, struct tether_req *r, const void *buf, size_t len,
                           tether_tag tag);
int tether__tcp_route_recv(tether__tcp_ep *ep, struct tether_req *r, void *buf, size_t len,
                           tether_tag tag);
/* A routed frame's header arrived on l: match it here or prepare to pass it on. */
int tether__tcp_route_start(tether__tcp_ep *ep, tether__link *l, const tether__frame *f);
/* m, a frame passing through that came on link from, is read: queue it towards its destination. */
int tether__tcp_route_pass(tether__tcp_ep *ep, const tether__link *from, tether__rxmsg *m);
/* Closing a routed endpoint: send this rank's leave notice to every neighbour; on receiving one,
 * count it and pass it on; 1 once every other rank's notice came from every neighbour. */
int tether__tcp_route_leave(tether__tcp_ep *ep);
int tether__tcp_route_leave_rx(tether__tcp_ep *ep, tether__link *l, const tether__frame *f);
int tether__tcp_route_all_left(const tether__tcp_ep *ep);
/* The link a message to or from peer travels on first (for test's progress). */
tether__link *tether__tcp_hop(tether__tcp_ep *ep, int peer);

/* Progress thread (progress.c), caller holds ep->mu: wake the thread (bytes left queued), wake
 * threads waiting in tether__tcp_wait (events moved), remember what this thread's test saw. */
void tether__tcp_progress_kick(tether__tcp_ep *ep);
void tether__tcp_progress_signal(tether__tcp_ep *ep);
void tether__tcp_progress_seen(const tether__tcp_ep *ep);
int tether__tcp_progress_wait(tether__tcp_ep *ep, int timeout_ms);

#endif
