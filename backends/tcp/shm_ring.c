/* backends/tcp/shm_ring.c - two single-producer, single-consumer byte rings in one shared mapping
 * (the protocol: shm_ring.h). */
#include "shm_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "core/errors.h"
#include "core/params.h"

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "the rings' indices are shared between processes: they must be lock-free");

#define LINE 64 /* the writer's and the reader's words on cache lines of their own */

struct tether__shm_ring {
    _Alignas(LINE) _Atomic uint64_t head; /* bytes written: the writer's */
    _Atomic int asleep;                   /* the reader sleeps until bytes come */
    _Alignas(LINE) _Atomic uint64_t tail; /* bytes consumed: the reader's */
    _Atomic int wants_room;               /* the writer sleeps until room comes */
    _Alignas(LINE) unsigned char data[];
};

static size_t ring_bytes(uint64_t cap)
{
    return sizeof(struct tether__shm_ring) + (size_t)cap;
}

uint64_t tether__shm_ring_default(int size)
{
    uint64_t fit = (uint64_t)TETHER__SHM_RINGS_TOTAL / ((uint64_t)size * (uint64_t)size), cap = 1;
    while (cap * 2 <= fit)
        cap *= 2;
    return cap > TETHER__SHM_RING_MAX   ? TETHER__SHM_RING_MAX
           : cap < TETHER__SHM_RING_MIN ? TETHER__SHM_RING_MIN
                                        : cap;
}

int tether__shm_config(int size, uint64_t *cap)
{
    long on, bytes;
    int set;
    TRY(tether__param_long(TETHER__P_SHM, &on));
    TRY(set = tether__param_long(TETHER__P_SHM_RING, &bytes));
    if (!set) /* the row's default is computed here */
        bytes = (long)tether__shm_ring_default(size);
    if (bytes & (bytes - 1))
        return tether__fail(TETHER_ECONFIG, "%s=%ld: expected a power of two",
                            TETHER__VAR(SHM_RING), bytes);
    *cap = on ? (uint64_t)bytes : 0;
    return TETHER_OK;
}

/* Map the segment and fault every page in now: a page first touched inside a call costs a fault
 * (several microseconds in a VM), and a ring's first turn touched 256 of them per MiB: the first
 * hundred 16 KiB all-reduces of 4 ranks took 280 us each instead of 48. The maker's writes
 * allocate the pages, the mapper's reads map them. */
static int map(tether__shm *s, int fd, uint64_t cap, int maker, char *why, size_t whylen)
{
    s->maplen = 2 * ring_bytes(cap);
    s->map = mmap(NULL, s->maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s->map == MAP_FAILED) {
        s->map = NULL;
        snprintf(why, whylen, "mmap of %zu bytes: %s", s->maplen, strerror(errno));
        return -1;
    }
    s->cap = cap;
    long page = sysconf(_SC_PAGESIZE);
    volatile unsigned char *p = s->map;
    unsigned char sum = 0;
    for (size_t at = 0; at<s->maplen; at += page> 0 ? (size_t)page : 4096) {
        if (maker)
            p[at] = 0;
        else
            sum = (unsigned char)(sum + p[at]);
    }
    (void)sum;
    return 0;
}

/* The lower rank writes ring 0 and reads ring 1; the higher rank the other way round. */
static void sides(tether__shm *s, int creator)
{
    struct tether__shm_ring *r0 = s->map;
    struct tether__shm_ring *r1 = (void *)((unsigned char *)s->map + ring_bytes(s->cap));
    s->tx = creator ? r0 : r1;
    s->rx = creator ? r1 : r0;
}

static void name_of(uint64_t id, char name[TETHER__SHM_NAME_MAX])
{
    snprintf(name, TETHER__SHM_NAME_MAX, "/tth%016llx", (unsigned long long)id);
}

int tether__shm_create(tether__shm *s, uint64_t cap, uint64_t *id, char *why, size_t whylen)
{
    static _Atomic unsigned serial;
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 8; tries++) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        unsigned word = (unsigned)ts.tv_nsec ^ (unsigned)atomic_fetch_add(&serial, 1) * 2654435761u;
        *id = (uint64_t)(unsigned)getpid() << 32 | word | 1; /* never 0: no offer */
        name_of(*id, s->name);
        fd = shm_open(s->name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        snprintf(why, whylen, "shm_open(%s): %s", s->name, strerror(errno));
        s->name[0] = '\0';
        return -1;
    }
    int rc = -1;
    if (ftruncate(fd, (off_t)(2 * ring_bytes(cap))) < 0)
        snprintf(why, whylen, "ftruncate of %s to %zu bytes: %s", s->name, 2 * ring_bytes(cap),
                 strerror(errno));
    else
        rc = map(s, fd, cap, 1, why, whylen);
    close(fd);
    if (rc < 0) {
        tether__shm_unname(s);
        return -1;
    }
    memset(s->map, 0, sizeof(struct tether__shm_ring)); /* fresh pages are zero; be sure */
    sides(s, 1);
    return 0;
}

int tether__shm_attach(tether__shm *s, uint64_t id, uint64_t cap, char *why, size_t whylen)
{
    char name[TETHER__SHM_NAME_MAX];
    name_of(id, name);
    int fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0) {
        snprintf(why, whylen, "shm_open(%s): %s", name, strerror(errno));
        return -1;
    }
    shm_unlink(name); /* mapped or not, nobody else needs the name */
    struct stat st;
    int rc = -1;
    if (fstat(fd, &st) < 0)
        snprintf(why, whylen, "fstat of %s: %s", name, strerror(errno));
    else if ((uint64_t)st.st_size < 2 * ring_bytes(cap)) /* macOS rounds up to a page */
        snprintf(why, whylen, "%s holds %lld bytes, not the %zu offered", name,
                 (long long)st.st_size, 2 * ring_bytes(cap));
    else
        rc = map(s, fd, cap, 0, why, whylen);
    close(fd);
    if (rc == 0)
        sides(s, 0);
    return rc;
}

void tether__shm_unname(tether__shm *s)
{
    if (s->name[0])
        shm_unlink(s->name);
    s->name[0] = '\0';
}

void tether__shm_close(tether__shm *s)
{
    tether__shm_unname(s);
    if (s->map)
        munmap(s->map, s->maplen);
    s->map = NULL;
    s->tx = s->rx = NULL;
}

/* Room in the tx ring, at least want bytes of it if there are (tail_seen, read again when it
 * shows less). */
static uint64_t room_for(tether__shm *s, uint64_t head, uint64_t want)
{
    if (s->cap - (head - s->tail_seen) < want)
        s->tail_seen = atomic_load_explicit(&s->tx->tail, memory_order_acquire);
    return s->cap - (head - s->tail_seen);
}

int tether__shm_fits(tether__shm *s, uint64_t n)
{
    return room_for(s, atomic_load_explicit(&s->tx->head, memory_order_relaxed), n) >= n;
}

/* Copy len bytes from p into the ring at stream position pos, wrapping at its end. */
static void put(tether__shm *s, uint64_t pos, const void *p, uint64_t len)
{
    uint64_t at = pos & (s->cap - 1), first = len < s->cap - at ? len : s->cap - at;
    memcpy(s->tx->data + at, p, (size_t)first);
    if (len > first) /* a call for nothing costs a small message a tenth of its write */
        memcpy(s->tx->data, (const unsigned char *)p + first, (size_t)(len - first));
}

/* Publish the bytes up to head: 1 when the peer sleeps waiting for them (ring its doorbell). */
static int publish(tether__shm *s, uint64_t head)
{
    struct tether__shm_ring *r = s->tx;
    atomic_store_explicit(&r->head, head, memory_order_seq_cst);
    return atomic_load_explicit(&r->asleep, memory_order_seq_cst) &&
           atomic_exchange_explicit(&r->asleep, 0, memory_order_seq_cst);
}

/* Copy len bytes from p into the ring from stream position head + *done, publishing every piece
 * bytes (counted from *done = 0) as they land; what is left of the last piece stays for the caller
 * to publish. */
static int put_pieces(tether__shm *s, uint64_t head, uint64_t *done, const void *p, uint64_t len,
                      uint64_t piece)
{
    const unsigned char *b = p;
    int ring = 0;
    while (len) {
        uint64_t to_edge = piece - *done % piece;
        uint64_t k = len < to_edge ? len : to_edge;
        put(s, head + *done, b, k);
        b += k, *done += k, len -= k;
        if (*done % piece == 0)
            ring |= publish(s, head + *done);
    }
    return ring;
}

size_t tether__shm_write(tether__shm *s, const struct iovec *iov, int n, int *ring)
{
    uint64_t head = atomic_load_explicit(&s->tx->head, memory_order_relaxed), want = 0;
    for (int i = 0; i < n; i++)
        want += iov[i].iov_len;
    uint64_t room = room_for(s, head, want), done = 0;
    /* in pieces only where the frame does not fit: the reader then takes it in parts anyway, and
     * one that fits is best taken whole, by the small path (engine_fast.c) */
    uint64_t piece = room < want ? TETHER__SHM_PIECE : UINT64_MAX;
    *ring = 0;
    for (int i = 0; i < n && room > done; i++) {
        uint64_t len = iov[i].iov_len < room - done ? iov[i].iov_len : room - done;
        *ring |= put_pieces(s, head, &done, iov[i].iov_base, len, piece);
    }
    if (done % piece)
        *ring |= publish(s, head + done);
    return (size_t)done;
}

void tether__shm_put_frame(tether__shm *s, const unsigned char hdr[TETHER__SHM_HDR], const void *p,
                           size_t len, int *ring)
{
    uint64_t head = atomic_load_explicit(&s->tx->head, memory_order_relaxed);
    put(s, head, hdr, TETHER__SHM_HDR);
    put(s, head + TETHER__SHM_HDR, p, len);
    *ring = publish(s, head + TETHER__SHM_HDR + len);
}

/* Copy the n bytes at ring position pos into dst, wrapping at its end. */
static void get(const tether__shm *s, uint64_t pos, void *dst, uint64_t n)
{
    uint64_t at = pos & (s->cap - 1), first = n < s->cap - at ? n : s->cap - at;
    memcpy(dst, s->rx->data + at, (size_t)first);
    if (n > first)
        memcpy((unsigned char *)dst + first, s->rx->data, (size_t)(n - first));
}

/* Consume the ring up to tail: 1 when the peer sleeps waiting for room (ring its doorbell). */
static int release(tether__shm *s, uint64_t tail)
{
    struct tether__shm_ring *r = s->rx;
    atomic_store_explicit(&r->tail, tail, memory_order_seq_cst);
    return atomic_load_explicit(&r->wants_room, memory_order_seq_cst) &&
           atomic_exchange_explicit(&r->wants_room, 0, memory_order_seq_cst);
}

/* Copy len bytes from ring position tail + skip into dst, then consume skip + len, a piece at a
 * time (TETHER__SHM_PIECE): *ring as tether__shm_read says. */
static void consume(tether__shm *s, uint64_t tail, uint64_t skip, void *dst, uint64_t len,
                    int *ring)
{
    unsigned char *d = dst;
    uint64_t pos = tail + skip;
    *ring = 0;
    for (; len > TETHER__SHM_PIECE; pos += TETHER__SHM_PIECE, d += TETHER__SHM_PIECE) {
        get(s, pos, d, TETHER__SHM_PIECE);
        len -= TETHER__SHM_PIECE;
        *ring |= release(s, pos + TETHER__SHM_PIECE);
    }
    get(s, pos, d, len);
    *ring |= release(s, pos + len);
}

long tether__shm_read(tether__shm *s, void *dst, size_t want, int *ring)
{
    struct tether__shm_ring *r = s->rx;
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = s->head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
    *ring = 0;
    if (head - tail > s->cap)
        return -1;
    uint64_t len = head - tail < want ? head - tail : want;
    if (len)
        consume(s, tail, 0, dst, len, ring);
    return (long)len;
}

/* Bytes waiting in the rx ring from tail, at least want of them if there are (head_seen, read
 * again when it shows less; every consumer keeps it at or past tail); more than the ring holds
 * when the peer's index is corrupt. */
static uint64_t waiting_for(tether__shm *s, uint64_t tail, uint64_t want)
{
    if (s->head_seen - tail < want)
        s->head_seen = atomic_load_explicit(&s->rx->head, memory_order_acquire);
    return s->head_seen - tail;
}

int tether__shm_peek(tether__shm *s, void *dst, size_t n)
{
    uint64_t tail = atomic_load_explicit(&s->rx->tail, memory_order_relaxed);
    uint64_t held = waiting_for(s, tail, n);
    if (held > s->cap || held < n)
        return 0;
    get(s, tail, dst, n);
    return 1;
}

int tether__shm_take_frame(tether__shm *s, const unsigned char hdr[TETHER__SHM_HDR], void *dst,
                           size_t n, int *ring)
{
    uint64_t tail = atomic_load_explicit(&s->rx->tail, memory_order_relaxed);
    uint64_t held = waiting_for(s, tail, TETHER__SHM_HDR + (uint64_t)n), at = tail & (s->cap - 1);
    unsigned char seen[TETHER__SHM_HDR];
    const unsigned char *h = s->rx->data + at;
    *ring = 0;
    if (held > s->cap || held < TETHER__SHM_HDR + (uint64_t)n)
        return 0;
    if (s->cap - at < TETHER__SHM_HDR) { /* the header wraps: compare a copy */
        get(s, tail, seen, TETHER__SHM_HDR);
        h = seen;
    }
    if (memcmp(h, hdr, TETHER__SHM_HDR) != 0)
        return 0;
    consume(s, tail, TETHER__SHM_HDR, dst, n, ring);
    return 1;
}

uint64_t tether__shm_written(const tether__shm *s)
{
    return atomic_load_explicit(&s->rx->head, memory_order_acquire);
}

uint64_t tether__shm_unread(const tether__shm *s)
{
    return atomic_load_explicit(&s->rx->head, memory_order_acquire) -
           atomic_load_explicit(&s->rx->tail, memory_order_relaxed);
}

uint64_t tether__shm_unconsumed(const tether__shm *s)
{
    return atomic_load_explicit(&s->tx->head, memory_order_relaxed) -
           atomic_load_explicit(&s->tx->tail, memory_order_acquire);
}

int tether__shm_arm_read(tether__shm *s)
{
    atomic_store_explicit(&s->rx->asleep, 1, memory_order_seq_cst);
    return atomic_load_explicit(&s->rx->head, memory_order_seq_cst) !=
           atomic_load_explicit(&s->rx->tail, memory_order_relaxed);
}

int tether__shm_arm_room(tether__shm *s)
{
    atomic_store_explicit(&s->tx->wants_room, 1, memory_order_seq_cst);
    return atomic_load_explicit(&s->tx->head, memory_order_relaxed) -
               atomic_load_explicit(&s->tx->tail, memory_order_seq_cst) <
           s->cap;
}
