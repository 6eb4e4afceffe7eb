/* backends/net/frame.h - the 32-byte frame header, striping across links, and receive matching.
 *
 * Every message travels as one frame per link it uses: a header, then that link's share of the
 * payload. A header carries the tag, the length of the whole message and the frame type: data;
 * abort with a status code (its payload is the reason text); bye, the last frame an endpoint
 * sends of its own, after which the end of the stream is no failure; or routed, data between two
 * ranks with no link (the ring), whose code names its origin and destination, cut into chunks
 * (below) that every rank on the way passes on one at a time, on link 0; or leave, the notice of a
 * closing ring rank (route.c); or heartbeat, a header alone on link 0 (on every link of a pair
 * with several) that says the sender is alive (heartbeat.c); or ack, failover and tunnel, the
 * bookkeeping of a pair's links, and switch, a lane back on a socket of its own
 * (backends/tcp/engine_lane.c). Messages of at least TETHER__STRIPE_MIN bytes are cut into one
 * contiguous stripe per link, in link order, so K parallel links share the bytes; smaller ones go
 * whole on link 0. Both sides derive the stripes from the length in the header, so a link's byte
 * stream always parses, and each link carries its frames in send order, so matching per link keeps
 * the order of messages between a pair. Everything here is pure (no sockets), for unit tests. */
#ifndef TETHER_NET_FRAME_H
#define TETHER_NET_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "core/passed.h"
#include "core/transport.h"

#define TETHER__FRAME_SIZE 32
#define TETHER__FRAME_DATA 0x54464401u  /* type words carry a marker, so a desynchronised stream */
#define TETHER__FRAME_ABORT 0x54464402u /* is caught at once instead of read as a length */
#define TETHER__FRAME_BYE 0x54464403u
#define TETHER__FRAME_ROUTED 0x54464404u      /* data between ranks with no link: passed on */
#define TETHER__FRAME_LEAVE 0x54464405u       /* rank `code` is closing: passed on round the ring */
#define TETHER__FRAME_ROUTED_MORE 0x5446440Bu /* the next chunk of a routed message */
/* Cross-memory attach between ranks of one host (cma.h): an offer to read the sender's memory
 * (payload: pid, cookie address and value, epoch address), its answer (code 1 yes, 0 no), a
 * message left in the sender's memory (tag and len as data; payload: address, id, epoch) and the
 * notice that it was read (len: its id). */
#define TETHER__FRAME_CMA_OFFER 0x54464406u
#define TETHER__FRAME_CMA_ANSWER 0x54464407u
#define TETHER__FRAME_CMA_DATA 0x54464408u
#define TETHER__FRAME_CMA_DONE 0x54464409u
/* A header alone: the sender is alive (heartbeat.c). */
#define TETHER__FRAME_HEARTBEAT 0x5446440Au
/* The lanes of a pair with several links (backends/tcp/engine_lane.c), code: the lane. ack: the
 * sender of this frame has consumed len bytes of the lane's stream (a header alone, outside every
 * stream, like a heartbeat); failover: the lane's socket is gone, and the sender consumed len
 * bytes of it (a header alone); tunnel: len bytes of the lane's stream, carried on another lane. */
#define TETHER__FRAME_ACK 0x5446440Cu
#define TETHER__FRAME_FAILOVER 0x5446440Du
#define TETHER__FRAME_TUNNEL 0x5446440Eu
/* switch: lane `code` has a socket again, and the sender consumed len bytes of it through the
 * tunnel (a header alone): from that position the lane's stream goes on its socket. */
#define TETHER__FRAME_SWITCH 0x5446440Fu
/* Shared-memory rings between ranks of one host (backends/tcp/engine_shm.c), headers alone on a
 * pair's only link. offer, from the lower rank: len names its segment (0: none offered), code is
 * log2 of its bytes per direction. on: code 1, the sender's frames go on in the ring from here
 * (the higher rank's also accepts the offer); code 0, the offer is declined. */
#define TETHER__FRAME_SHM_OFFER 0x54464410u
#define TETHER__FRAME_SHM_ON 0x54464411u
/* The end of opening on a full mesh, once the sender's every pair has settled its rings: code 1
 * when each of them has rings, else 0 (a header alone). Every rank ANDs its own with every peer's,
 * so all agree whether every pair of the job has rings (TETHER__CAP_MEMORY_RINGS). */
#define TETHER__FRAME_RINGS_ALL 0x54464412u
static inline int tether__frame_is_cma(uint32_t type)
{
    return type >= TETHER__FRAME_CMA_OFFER &&
           type <= TETHER__FRAME_CMA_DONE; /* numbered in a row */
}
#define TETHER__CMA_OFFER_SIZE 32
#define TETHER__CMA_DESC_SIZE 24
#define TETHER__STRIPE_MIN (256u << 10)
#define TETHER__ABORT_TEXT_MAX 1024

typedef struct tether__frame {
    tether__tag tag;
    uint64_t len; /* data: bytes of the whole message; abort: bytes of the reason; bye: 0 */
    uint32_t type;
    int32_t code; /* abort: the sender's TETHER_E* status; routed: origin and destination */
} tether__frame;

/* A routed frame's code: origin rank in the high 16 bits, destination in the low 16. */
#define TETHER__ROUTE_MAX_RANKS 65536
static inline int32_t tether__route_code(int src, int dst)
{
    return (int32_t)((uint32_t)src << 16 | (uint32_t)dst);
}
static inline int tether__route_src(int32_t code)
{
    return (int)((uint32_t)code >> 16);
}
static inline int tether__route_dst(int32_t code)
{
    return (int)((uint32_t)code & 0xffffu);
}

/* A routed message of len bytes travels as chunks of TETHER__ROUTE_CHUNK bytes, one frame each:
 * a routed frame (tag, len: the whole message, for the receiver's checks) with the first chunk,
 * then one routed-more frame (same tag and code, len: its chunk alone) per further chunk, the last
 * one shorter. A rank on the way thus holds a chunk, never the message, and sends one on while the
 * next arrives; each frame says its own payload length, so it needs no state to pass one on. The
 * frames of one origin travel one path in order and the destination joins them in order: a chunk
 * of another length, of another tag, or with no message begun, is a malformed frame. 512 KiB:
 * over links shaped to 400 Mbit/s a 64 MiB send two hops away reached the same rate with 256 KiB
 * and 1 MiB chunks (measured: docs/perf/notes.md, backends/net/frame.h), so the smallest block
 * that keeps per-frame work negligible at loopback speed. */
#define TETHER__ROUTE_CHUNK ((uint64_t)512 << 10)
/* Chunks of a len-byte routed message (a zero-length message is one empty chunk). */
uint64_t tether__route_chunks(uint64_t len);
/* Payload bytes of the routed frame that begins a len-byte message. */
uint64_t tether__route_first(uint64_t len);
/* 1 when a routed-more frame of n payload bytes is the next chunk of a msglen-byte message of
 * which got bytes came, else 0. */
int tether__route_next_ok(uint64_t msglen, uint64_t got, uint64_t n);

void tether__frame_encode(const tether__frame *f, unsigned char out[TETHER__FRAME_SIZE]);
/* 0, or -1 when the type word is not a known frame type (a corrupt or foreign stream). */
int tether__frame_decode(const unsigned char in[TETHER__FRAME_SIZE], tether__frame *f);

/* The stripe of a len-byte message that link (0..nlinks-1) carries: *off and *n bytes. Returns 1
 * when the link carries a frame of this message: a non-empty stripe, or link 0, which always does
 * (so a zero-length message still travels). */
int tether__stripe(uint64_t len, int nlinks, int link, uint64_t *off, uint64_t *n);

/* One message on one link, as the receive side sees it: a posted receive waiting for its frame,
 * or a frame that arrived first (unexpected), possibly still being read. */
typedef struct tether__rxmsg {
    struct tether__rxmsg *next;
    tether__tag tag;
    uint64_t msglen;    /* length of the whole message (what the length check compares) */
    uint64_t len;       /* bytes this link carries */
    uint64_t got;       /* bytes read so far */
    unsigned char *buf; /* where they go: the user's buffer, or a heap copy while unexpected */
    int heap;           /* buf and this struct are the engine's (an unexpected message) */
    int cma;            /* heap: buf holds a descriptor of the message, not its bytes */
    uint64_t cap;       /* heap only: payload bytes the block has room for */
    int lazy;           /* heap, longer than a kept block: buf is an allocation of its own that
                           grows as bytes arrive (tether__rxmsg_reserve), room bytes so far */
    uint64_t room;
    struct tether__req *req; /* the receive it belongs to; NULL while unexpected */
} tether__rxmsg;

typedef struct tether__rxq {
    tether__rxmsg *head, *tail;
} tether__rxq;

void tether__rxq_push(tether__rxq *q, tether__rxmsg *m);

/* Blocks for unexpected messages (struct and payload in one allocation), kept for the next ones.
 * Algorithms post a window of receives and send further ahead, so a large collective meets a
 * steady stream of unexpected segments of the same size; a fresh malloc for each one (mmap'd above
 * 128 KiB) paid a page fault per 4 KiB as it was read, which made the reads several times slower
 * than the copy itself (measured: docs/perf/notes.md, backends/net/frame.h). Caller serialises (the
 * endpoint's mutex). */
#define TETHER__RXCACHE_SLOTS 8
#define TETHER__RXCACHE_KEEP_MAX ((uint64_t)4 << 20) /* larger blocks are freed, not kept */
typedef struct tether__rxcache {
    tether__rxmsg *slot[TETHER__RXCACHE_SLOTS];
    uint64_t largest; /* the largest message the endpoint has posted (sent or received) */
} tether__rxcache;

/* What a peer may make this rank buffer. A message that arrives before its receive carries its
 * length in its header, and buffering it means allocating that much: a corrupt or hostile header
 * (a fuzzed one announced 4-21 GB) must not. A call cuts what it sends from the buffers its
 * ranks pass, and every rank of a call passes the same sizes, so a message no receive claims yet
 * may be at most TETHER__UNEXPECTED_FLOOR or twice the largest message this endpoint has posted
 * (a later call may be larger than any before), whichever is more; a longer one fails the link.
 * note: a message of len was posted. admits: 1 if a message of len may be buffered. */
#define TETHER__UNEXPECTED_FLOOR ((uint64_t)1 << 30)
void tether__rxcache_note(tether__rxcache *c, uint64_t len);
/* Point-to-point messages (TETHER__TAG_P2P) are not cut from buffers every rank passes: a send may
 * be the largest message of the job and arrive before its receive is posted (a 2 GiB send through
 * the socket did). They may be buffered up to half this machine's memory, which a corrupt length
 * (4-21 GB here) still exceeds; tag says which rule holds. */
int tether__rxcache_admits(const tether__rxcache *c, uint64_t len, tether__tag tag);
uint64_t tether__rxcache_limit(const tether__rxcache *c, tether__tag tag);

/* A zeroed message with heap = 1 and buf/len/cap set for len payload bytes (plus one byte for a
 * terminator); NULL when out of memory. */
tether__rxmsg *tether__rxcache_get(tether__rxcache *c, uint64_t len);
/* The same for a message nobody has posted for, whose length only its header says: above
 * TETHER__RXCACHE_KEEP_MAX its payload buffer starts empty and grows as bytes arrive
 * (tether__rxmsg_reserve), so a header that announces gigabytes and sends a few bytes costs a few
 * bytes, not what it announced (the admits() bound still holds). */
tether__rxmsg *tether__rxcache_get_lazy(tether__rxcache *c, uint64_t len);
/* Room in m->buf at m->got for *n more bytes (*n <= len - got), or for fewer: *n is cut to what
 * fits (at least one byte). A lazy buffer grows by doubling from 1 MiB, so it holds at most twice
 * what has arrived and reading a message costs few reallocations; it may move: take m->buf +
 * m->got only after this. 0, or -1 when out of memory. */
int tether__rxmsg_reserve(tether__rxmsg *m, uint64_t *n);
/* A receive claimed unexpected m while it still arrives: the rest goes straight to buf (its bytes
 * so far were copied there), and a lazy buffer is freed. */
void tether__rxmsg_redirect(tether__rxmsg *m, unsigned char *buf);
/* Give back a heap message (freed when the cache is full or it is too large to keep). */
void tether__rxcache_put(tether__rxcache *c, tether__rxmsg *m);
void tether__rxcache_clear(tether__rxcache *c);

typedef enum {
    TETHER__MATCH_NONE, /* nothing in the queue for this tag */
    TETHER__MATCH_OK,   /* *m matched and was removed from the queue */
    TETHER__MATCH_SIG,  /* *m has the same group and seq but another signature: ranks disagree */
    TETHER__MATCH_LEN,  /* *m has the same tag but another message length */
} tether__match;

/* Find the first message of q with the same (group, seq, step) as tag. Any message with the same
 * (group, seq) and another sig is a mismatch even when its step differs: the ranks are running
 * different collectives. Not so for point-to-point messages (TETHER__TAG_P2P): each user tag (the
 * step) is numbered on its own, so the same seq with another step is another tag's message, whose
 * size may well differ. *m is left in the queue unless the result is TETHER__MATCH_OK. */
tether__match tether__rxq_match(tether__rxq *q, tether__tag tag, uint64_t msglen,
                                tether__rxmsg **m);

/* Whether m is in q (1 or 0), and taking it out of q (q unchanged when it is not there). */
int tether__rxq_holds_msg(const tether__rxq *q, const tether__rxmsg *m);
void tether__rxq_remove(tether__rxq *q, tether__rxmsg *m);

/* 1 if q holds a message from world rank peer of a collective call this rank has passed (core/
 * passed.h), with why saying so; else 0. */
int tether__rxq_stale(const tether__rxq *q, tether__passed *p, int peer, char *why, size_t why_len);

/* 1 if q holds a message with tag's group, seq and step (whatever its sig), else 0: the probe of an
 * any-source receive (core/p2p.c). */
int tether__rxq_holds(const tether__rxq *q, tether__tag tag);

#endif
