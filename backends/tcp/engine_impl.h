/* backends/tcp/engine_impl.h - the engine's private structures (engine.c, engine_rx.c). */
#ifndef TETHER_TCP_ENGINE_IMPL_H
#define TETHER_TCP_ENGINE_IMPL_H

#include <pthread.h>

#include "engine.h"
#include "frame.h"

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
} tether__txmsg;

typedef struct tether__link {
    int fd;
    int peer, index, nlinks; /* index among the nlinks sockets to peer */
    tether__txmsg *txhead, *txtail;
    tether__rxq posted;     /* receives waiting for their frame, in posting order */
    tether__rxq unexpected; /* frames that came first, in arrival order */
    tether__rxmsg *cur;     /* the frame whose payload is being read, or NULL */
    int cur_abort;          /* cur is an abort frame's reason text */
    int32_t abort_code;
    int bye; /* the peer closed normally: its end of stream is no failure */
    int eof; /* ...and it came: nothing more to read or poll */
    unsigned char *rbuf;
    size_t rlen; /* bytes held at the start of rbuf */
    uint64_t bytes_sent, bytes_recvd;
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

struct tether__tcp_ep {
    pthread_mutex_t mu;
    const char *backend;
    int rank, size;
    tether__link **links; /* per peer: its nlinks[peer] links */
    int *nlinks;
    tether__link **flat; /* every link, for poll */
    int nflat;
    char (*addr)[TETHER__ADDR_TEXT]; /* per peer, for messages */
    struct tether_req *live;
    uint64_t max_io;
    int err; /* sticky status, 0 while healthy */
    char errmsg[TETHER_ERRMSG_MAX];
    int aborted;
};

/* Break ep (first failure wins): record code and the message, fail every request, forget every
 * queued frame so nothing touches a user buffer again. Returns code. Caller holds ep->mu. */
int tether__tcp_break(tether__tcp_ep *ep, int code, const char *fmt, ...) TETHER_PRINTF(3, 4);

/* EPEER for a message to or from a peer that closed normally. Caller holds ep->mu. */
int tether__tcp_gone(tether__tcp_ep *ep, const tether__link *l, const char *what);

/* Receive side (engine_rx.c), caller holds ep->mu. */
int tether__tcp_read(tether__tcp_ep *ep, tether__link *l);
int tether__tcp_post_recv(tether__tcp_ep *ep, tether__link *l, struct tether_req *r,
                          tether__rxmsg *part);
void tether__tcp_rx_clear(tether__link *l);

#endif
