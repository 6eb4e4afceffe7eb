/* backends/tcp/shm_ring.h - a byte stream in shared memory between two processes of one host: two
 * lock-free single-producer, single-consumer rings (one per direction) in one shared mapping.
 *
 * Between ranks of one host every byte through a socket costs two system calls and two kernel
 * copies, and a small message a wake-up on each side: several microseconds that Open MPI's vader
 * and NCCL's SHM transport do not pay. A ring costs a copy in and a copy out, in user space. The
 * engine (engine_shm.c) keeps its socket beside the ring for what memory cannot say: that the peer
 * died (the socket's end), and to wake a peer asleep in poll() (a doorbell byte, sent only when the
 * peer said it sleeps). So every wait still sleeps in one poll() over sockets, on Linux and macOS.
 *
 * Sleeping without a lost wake-up: the reader sets its ring's `asleep` flag, then looks once more
 * for bytes; the writer publishes its bytes, then looks at the flag (both sequentially consistent),
 * so either the reader sees the bytes or the writer sees the flag and rings. A writer that finds no
 * room does the same with the `wants_room` flag, which the reader looks at after consuming.
 *
 * The segment is named (POSIX shm_open, which macOS has too) for the instant between its creation
 * by the lower rank and its mapping by the higher one, who removes the name at once; the creator
 * removes it too once answered, so a crash leaves at most one name behind for that instant. The
 * bytes a peer wrote are checked like a socket's: indices that do not add up are a broken stream.
 * Nothing here knows the engine or frames; every call but tether__shm_written is made with the
 * endpoint's mutex held. */
#ifndef TETHER_TCP_SHM_RING_H
#define TETHER_TCP_SHM_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* "/tth" + 16 hex digits (the segment's id: the creator's pid and a varying word), and its NUL:
 * within macOS's 31. */
#define TETHER__SHM_NAME_MAX 24
/* Default bytes per direction (TETHER_SHM_RING): 1 MiB up to 8 ranks, less beyond so that a job
 * of many ranks on one host maps at most about 64 MiB of rings in all, at least 64 KiB each. Two
 * copies through a ring of 1 MiB beat process_vm_readv up to a few MiB in this VM (2-rank
 * all-reduce, 1 MiB: 120 us against 240, 4 MiB: 500 against 860); larger rings were slower
 * (their bytes no longer stay in cache), smaller ones slower from 1 MiB
 * (measured: docs/perf/notes.md, backends/tcp/shm_ring.h). */
#define TETHER__SHM_RING_MAX (1L << 20)
/* A write that does not fit, and every long read, publish the ring's index every this many bytes,
 * so the peer works on one piece while this side copies the next. Published only at the end, a
 * message that filled the ring left the reader idle while it was written and the writer idle
 * while it was read: one-host broadcast of 1 MiB at N = 2 took 88-90 us a call, 35-36 with 64 KiB
 * pieces (32 KiB alike, 256 KiB 38), N = 3 116-140 against 90-93. A frame that fits is published
 * whole: in pieces, the reader met 64 and 256 KiB frames in parts and took them through the
 * general path, 1.2-1.3x their time (measured: docs/perf/notes.md, backends/tcp/shm_ring.h). */
#define TETHER__SHM_PIECE ((uint64_t)64 << 10)
#define TETHER__SHM_RING_MIN (64L << 10)
#define TETHER__SHM_RINGS_TOTAL (64L << 20)

struct tether__shm_ring; /* one direction, in the shared mapping */

/* One process's side of a pair's segment. */
typedef struct tether__shm {
    void *map;
    size_t maplen;
    struct tether__shm_ring *tx, *rx;
    uint64_t cap; /* bytes per direction, a power of two */
    /* The peer's index as this side last read it: tx's tail (room is at least what it leaves)
     * and rx's head (at least that much was written). Each side reads the other's index only
     * when these show too little: a frame at a time, an index read for every frame missed in
     * the cache whenever the peer had just moved it, a cross-core round trip per frame
     * (measured: docs/perf/notes.md, backends/tcp/shm_ring.h). */
    uint64_t tail_seen, head_seen;
    char name[TETHER__SHM_NAME_MAX]; /* while named: the creator removes it once answered */
} tether__shm;

/* TETHER_SHM (0 turns the rings off) and TETHER_SHM_RING (bytes per direction; its default for a
 * job of size ranks): *cap 0 when off. */
int tether__shm_config(int size, uint64_t *cap);
/* The default ring of a job of size ranks. */
uint64_t tether__shm_ring_default(int size);

/* The lower rank: create and map a segment of cap bytes per direction; *id names it (never 0).
 * 0, or -1 with why (the caller then offers nothing, and the pair stays on its socket). */
int tether__shm_create(tether__shm *s, uint64_t cap, uint64_t *id, char *why, size_t whylen);
/* The higher rank: map the segment the peer's id names, of cap bytes per direction, and remove
 * its name. 0, or -1 with why. */
int tether__shm_attach(tether__shm *s, uint64_t id, uint64_t cap, char *why, size_t whylen);
/* Remove the name if it is still there (the creator, answered or closing). */
void tether__shm_unname(tether__shm *s);
/* Unmap (the peer's side stays mapped until it unmaps too). */
void tether__shm_close(tether__shm *s);

/* Copy up to total bytes of iov[0..n) into the tx ring; the bytes copied. *ring is set when the
 * peer sleeps waiting for bytes: send it a doorbell. */
size_t tether__shm_write(tether__shm *s, const struct iovec *iov, int n, int *ring);
/* Copy up to want bytes out of the rx ring into dst: the bytes copied, or -1 when the peer's
 * indices are corrupt. *ring is set when the peer sleeps waiting for room: send it a doorbell. */
long tether__shm_read(tether__shm *s, void *dst, size_t want, int *ring);
/* Copy the next n bytes of the rx ring into dst without consuming them: 1, or 0 if fewer wait. */
int tether__shm_peek(tether__shm *s, void *dst, size_t n);

/* A small message's two pieces, as the engine's fast path moves them (engine_fast.c): a header of
 * TETHER__SHM_HDR bytes and its payload. Each call is one pass over the ring's indices, with no
 * gather list and no copy of the header to look at it. */
#define TETHER__SHM_HDR 32
/* Write hdr and len bytes from p into the tx ring, which the caller knows has room for them
 * (tether__shm_fits); *ring as tether__shm_write says. */
void tether__shm_put_frame(tether__shm *s, const unsigned char hdr[TETHER__SHM_HDR], const void *p,
                           size_t len, int *ring);
/* If the rx ring's next bytes are hdr followed by at least n more: copy those n into dst, consume
 * both and return 1 (*ring as tether__shm_read says); else 0, nothing consumed. */
int tether__shm_take_frame(tether__shm *s, const unsigned char hdr[TETHER__SHM_HDR], void *dst,
                           size_t n, int *ring);
/* 1 when n bytes fit in the tx ring now. */
int tether__shm_fits(tether__shm *s, uint64_t n);
/* How far the peer has written into the rx ring: the one call that needs no mutex (an atomic
 * load), for a waiter's poll between its tests. */
uint64_t tether__shm_written(const tether__shm *s);
/* Bytes waiting in the rx ring, and bytes of the tx ring the peer has not consumed yet. */
uint64_t tether__shm_unread(const tether__shm *s);
uint64_t tether__shm_unconsumed(const tether__shm *s);

/* Before sleeping in poll(): ask the peer for a doorbell on new bytes (read) or on room (room).
 * Returns 1 when there is no need to sleep: bytes wait unread (as poll() says of a socket that
 * holds some), or room is there already. A request stays until the peer answers it: a waker that
 * finds none armed then costs the peer no system call, and one left armed costs it one doorbell,
 * never a lost wake-up of another thread asleep on the same link. */
int tether__shm_arm_read(tether__shm *s);
int tether__shm_arm_room(tether__shm *s);

#endif
