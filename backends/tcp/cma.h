/* backends/tcp/cma.h - cross-memory attach: ranks of one host read large messages straight from
 * the sender's memory (Linux process_vm_readv), one copy instead of two socket copies.
 *
 * Through a socket every byte is copied twice by the kernel (into the socket, out of it), and on
 * one host those copies are the whole cost of a large collective. MPI's shared-memory transport and
 * NCCL's SHM transport avoid them the same way. The socket still carries everything else: the
 * headers, the order, the matching and every failure.
 *
 * Protocol, on the links a rank already has (frame.h):
 * - At creation each rank offers its peers on this host (link 0) its pid, the address and value of
 *   a random cookie, and the address of its withdraw epoch; every other peer, and every peer when
 *   it does not take part, gets an empty offer, so both ends always expect the same frames. A peer
 * that reads the cookie back with process_vm_readv answers yes; anything else (another pid
 * namespace, no permission, not Linux, TETHER_TCP_CMA_MIN=0) answers no, and that direction stays
 * on the socket. The endpoint is ready once both offers are answered: no frame of this exchange is
 * left to arrive later, unasked, at a rank that is closing.
 * - After a yes, a message of at least TETHER_TCP_CMA_MIN bytes travels as one CMA_DATA frame per
 *   stripe: the tag and length as a data frame has them, and a descriptor (address, id, epoch)
 *   instead of the payload. The receiver copies the stripe into the posted receive and answers
 *   CMA_DONE with the id; only then does the send finish, so the buffer stays valid while it is
 *   read.
 * - A descriptor nobody has asked for waits, like bytes left in a socket, until its receive is
 *   posted; a wait that passes idle copies such descriptors out (to the heap) so that two ranks
 * that each finish a send before receiving still progress.
 * - A sender whose endpoint breaks or closes with descriptors still unread bumps its epoch before
 *   returning, so its buffers may be freed: a receiver compares the epoch after each copy and fails
 *   rather than deliver what it read from memory the program may already have reused.
 * The memory path never touches the engine: each call gets the state of the link a frame concerns
 * (tether__cma_link, which only this file reads or writes) and returns what the engine must do in
 * a tether__cma_todo: fail the endpoint with this message, send this frame back on the link,
 * finish that request's part. Every call is made with the endpoint's mutex held; the one call
 * back into the engine is its stand-in for the heartbeats during a long copy (tether__cma_at). */
#ifndef TETHER_TCP_CMA_H
#define TETHER_TCP_CMA_H

#include <stddef.h>
#include <stdint.h>

#include "backends/net/frame.h"
#include "core/errors.h"

/* A descriptor frame this rank sent, waiting for the reader's CMA_DONE (part of a send's frame). */
typedef struct tether__cma_send {
    struct tether__cma_send *next;
    uint64_t id;
    struct tether__req *req;
    unsigned char desc[TETHER__CMA_DESC_SIZE]; /* the frame's payload: address, id, epoch */
} tether__cma_send;

/* The memory path's state of one link. The offer and answer are link 0's; every link has its own
 * queue of descriptors in flight and its own frame being read. */
typedef struct tether__cma_link {
    int offered;  /* our offer waits for its answer: 2 a real one, 1 an empty one */
    int expected; /* the peer's offer has not come yet */
    int on;       /* the peer reads our memory: large sends go as descriptors */
    int read;     /* we read the peer's memory: its pid and epoch cell are known */
    int64_t pid;
    uint64_t epoch_addr;
    uint64_t next_id;
    tether__cma_send *wait; /* descriptors sent here whose CMA_DONE has not come */
    int unread;             /* unexpected descriptors on this link, not copied yet */
    tether__frame hdr;      /* the CMA frame whose payload is being read into buf */
    tether__rxmsg msg;
    unsigned char buf[TETHER__CMA_OFFER_SIZE];
} tether__cma_link;

/* The link a call concerns, for its messages and limits. */
typedef struct tether__cma_at {
    int rank, peer;         /* this rank, and the link's peer */
    const char *addr;       /* the peer's address, for messages */
    int index, nlinks;      /* the link among the peer's links (stripes) */
    uint64_t min;           /* this endpoint's TETHER_TCP_CMA_MIN: 0 = off */
    uint64_t max_io;        /* the most bytes one system call moves */
    tether__rxcache *cache; /* blocks for unexpected messages */
    /* A copy from the peer's memory calls busy(ctx), unless NULL, after each step bytes: it holds
     * the engine's lock for seconds at gigabytes, and the engine's heartbeats must go out. */
    uint64_t step;
    void (*busy)(void *ctx);
    void *ctx;
} tether__cma_at;

/* What the engine must do after a call, in this order: fail the endpoint (and nothing else), else
 * count read bytes received on the link, send frame (and n bytes of payload) on it, finish one part
 * of done. */
typedef enum {
    TETHER__CMA_OK,
    TETHER__CMA_FAIL,      /* code and why */
    TETHER__CMA_MALFORMED, /* the peer broke the protocol: what */
    TETHER__CMA_MISMATCH,  /* a descriptor of tag/len met a receive of want_tag/want_len */
    TETHER__CMA_TOO_LONG,  /* an unexpected message of tag/len is more than this rank buffers */
} tether__cma_fail;

typedef struct tether__cma_todo {
    tether__cma_fail fail;
    int code;
    const char *what;
    tether__tag tag, want_tag;
    uint64_t len, want_len;
    uint64_t read; /* bytes copied from the peer's memory */
    int reply;
    tether__frame frame;
    unsigned char payload[TETHER__CMA_OFFER_SIZE];
    size_t n;
    struct tether__req *done;
    char why[TETHER__ERRMSG_MAX];
} tether__cma_todo;

/* TETHER_TCP_CMA_MIN: the smallest message read from the sender's memory; 0 turns it off. */
int tether__cma_min(uint64_t *out);

/* Our offer on link 0 of a peer (full = 0: an empty one, this rank does not take part): the
 * frame to send. */
void tether__cma_offer(tether__cma_link *c, int full, tether__cma_todo *t);

/* Whether link 0's offer or answer is still due. */
int tether__cma_negotiating(const tether__cma_link *c0);

/* Whether a message of len bytes to the peer whose link 0 is c0 travels as descriptors. */
int tether__cma_use(const tether__cma_link *c0, uint64_t min, uint64_t len);

/* Whether both directions with the peer whose link 0 is c0 read memory. */
int tether__cma_both_ways(const tether__cma_link *c0);

/* Make s (for request req) the descriptor of the stripe at payload, of a message of f's tag and
 * length: hdr gets the frame header, s->desc its payload; req gets one more part to finish, the
 * reader's CMA_DONE. */
void tether__cma_describe(tether__cma_link *c, tether__cma_send *s, struct tether__req *req,
                          const tether__frame *f, const unsigned char *payload,
                          unsigned char hdr[TETHER__FRAME_SIZE]);

/* Whether c's link must be read although no receive is posted on it (an offer, an answer or a
 * CMA_DONE is due), and whether descriptors sent on it wait for their CMA_DONE. */
int tether__cma_wants_input(const tether__cma_link *c);
int tether__cma_sending(const tether__cma_link *c);

/* A header of one of the CMA frame types arrived on the link of c (c0: its peer's link 0): the
 * message its payload is to be read into, or NULL when the header was all (see t). */
tether__rxmsg *tether__cma_rx_start(tether__cma_link *c, tether__cma_link *c0,
                                    const tether__cma_at *at, const tether__frame *f,
                                    tether__cma_todo *t);
/* That payload is read: an offer answered, or a descriptor copied into its posted receive (from
 * posted) or kept in unexpected until one is posted. */
void tether__cma_rx_done(tether__cma_link *c, tether__cma_link *c0, const tether__cma_at *at,
                         tether__rxq *posted, tether__rxq *unexpected, tether__cma_todo *t);

/* A posted receive part claims m, an unexpected descriptor of c's link: copy its stripe. */
void tether__cma_claim(tether__cma_link *c, const tether__cma_link *c0, const tether__cma_at *at,
                       tether__rxmsg *part, tether__rxmsg *m, tether__cma_todo *t);

/* A wait passed idle: copy one unexpected descriptor of unexpected out to the heap, so its sender
 * can finish. 1 when one was (or failed: see t), 0 when none is left. */
int tether__cma_unblock(tether__cma_link *c, const tether__cma_link *c0, const tether__cma_at *at,
                        tether__rxq *unexpected, tether__cma_todo *t);

/* The link's frames are forgotten (a break or close). */
void tether__cma_rx_clear(tether__cma_link *c);

/* The endpoint breaks or closes: forget the sends whose CMA_DONE has not come (1 if there were
 * any); after forgetting them on every link, tether__cma_withdrew bumps the epoch, if any were,
 * so that their readers discard what they read. */
int tether__cma_forget(tether__cma_link *c);
void tether__cma_withdrew(void);

#endif
