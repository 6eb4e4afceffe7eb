/* tests/unit/test_shm_ring.c - the shared-memory rings of pairs on one host (shm_ring.h): both
 * sides mapped in this process, as two ranks map them. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "backends/tcp/shm_ring.h"

#define CAP 4096

typedef struct {
    tether__shm a, b; /* a made it (the lower rank), b mapped it */
} pair;

static int setup(void **state)
{
    pair *p = calloc(1, sizeof *p);
    char why[256];
    uint64_t id;
    assert_int_equal(tether__shm_create(&p->a, CAP, &id, why, sizeof why), 0);
    assert_true(id != 0);
    assert_int_equal(tether__shm_attach(&p->b, id, CAP, why, sizeof why), 0);
    *state = p;
    return 0;
}

static int teardown(void **state)
{
    pair *p = *state;
    tether__shm_close(&p->a);
    tether__shm_close(&p->b);
    free(p);
    return 0;
}

static size_t put(tether__shm *s, const void *buf, size_t n, int *ring)
{
    struct iovec v = {(void *)buf, n};
    return tether__shm_write(s, &v, 1, ring);
}

/* Messages of every length up to twice the ring, each direction, wrapping round many times:
 * every byte comes out as it went in, in order. */
static void test_stream_wraps(void **state)
{
    pair *p = *state;
    unsigned char *out = malloc(3 * CAP), *in = malloc(3 * CAP);
    unsigned seed = 7;
    for (int dir = 0; dir < 2; dir++) {
        tether__shm *w = dir ? &p->b : &p->a, *r = dir ? &p->a : &p->b;
        for (size_t len = 1; len <= 2 * CAP; len += 97) {
            for (size_t i = 0; i < len; i++)
                out[i] = (unsigned char)(seed = seed * 1103515245u + 12345u) >> 16;
            size_t sent = 0, got = 0;
            int ring;
            while (got < len) {
                struct iovec v[2] = {
                    {out + sent, (len - sent) / 2},
                    {out + sent + (len - sent) / 2, len - sent - (len - sent) / 2}};
                sent += tether__shm_write(w, v, 2, &ring);
                long k = tether__shm_read(r, in + got, 1 + (got % 3000), &ring);
                assert_true(k >= 0);
                got += (size_t)k;
            }
            assert_int_equal(sent, len);
            assert_memory_equal(in, out, len);
            assert_true(tether__shm_unread(r) == 0);
        }
    }
    free(out);
    free(in);
}

/* A reader that says it sleeps is rung by the next write, once; a writer out of room is rung by
 * the next read, once; a side with bytes or room waiting is told not to sleep. */
static void test_doorbells(void **state)
{
    pair *p = *state;
    unsigned char buf[CAP];
    memset(buf, 1, sizeof buf);
    int ring = -1;
    assert_int_equal(tether__shm_arm_read(&p->b), 0); /* nothing there: sleep */
    assert_int_equal(put(&p->a, buf, 10, &ring), 10);
    assert_int_equal(ring, 1);
    assert_int_equal(put(&p->a, buf, 10, &ring), 10);
    assert_int_equal(ring, 0);                        /* answered already */
    assert_int_equal(tether__shm_arm_read(&p->b), 1); /* 20 bytes wait: no sleep */
    assert_int_equal(tether__shm_read(&p->b, buf, sizeof buf, &ring), 20);
    assert_int_equal(ring, 0);

    assert_int_equal(put(&p->a, buf, CAP, &ring), CAP); /* full (and rings: b armed above) */
    assert_int_equal(put(&p->a, buf, 1, &ring), 0);
    assert_true(tether__shm_unconsumed(&p->a) == CAP);
    assert_int_equal(tether__shm_arm_room(&p->a), 0); /* no room: sleep */
    assert_int_equal(tether__shm_read(&p->b, buf, 1, &ring), 1);
    assert_int_equal(ring, 1);
    assert_int_equal(tether__shm_read(&p->b, buf, 1, &ring), 1);
    assert_int_equal(ring, 0);
    assert_int_equal(tether__shm_arm_room(&p->a), 1); /* room now */
}

/* Peeking shows the next bytes without taking them. */
static void test_peek(void **state)
{
    pair *p = *state;
    unsigned char hdr[32], got[32];
    int ring;
    for (int i = 0; i < 32; i++)
        hdr[i] = (unsigned char)i;
    assert_int_equal(tether__shm_peek(&p->a, got, sizeof got), 0);
    assert_int_equal(put(&p->b, hdr, 20, &ring), 20);
    assert_int_equal(tether__shm_peek(&p->a, got, sizeof got), 0); /* not all there yet */
    assert_int_equal(put(&p->b, hdr + 20, 12, &ring), 12);
    assert_int_equal(tether__shm_peek(&p->a, got, sizeof got), 1);
    assert_memory_equal(got, hdr, sizeof hdr);
    assert_true(tether__shm_unread(&p->a) == 32);
}

/* A frame put whole comes out through take_frame only when its header is the one asked for and
 * its payload is all there, wherever it starts: k bytes before the ring's end, for every k that
 * splits its header or its payload there. Anything else is left in place, unconsumed, for the
 * general path. */
static void test_frames(void **state)
{
    pair *p = *state;
    unsigned char hdr[TETHER__SHM_HDR], other[TETHER__SHM_HDR], out[100], in[100];
    static unsigned char fill[CAP];
    uint64_t pos = 0; /* bytes through the ring so far */
    int ring;
    for (int i = 0; i < TETHER__SHM_HDR; i++)
        hdr[i] = other[i] = (unsigned char)(i * 7);
    other[TETHER__SHM_HDR - 1] ^= 1;
    for (size_t k = 1; k <= TETHER__SHM_HDR + sizeof out; k++) {
        size_t len = sizeof out - k % 50;
        size_t skip = (size_t)((CAP - pos % CAP + CAP - k) % CAP); /* start k before the end */
        for (size_t i = 0; i < len; i++)
            out[i] = (unsigned char)(k + i);
        assert_int_equal(put(&p->a, fill, skip, &ring), skip);
        assert_true(tether__shm_read(&p->b, fill, skip, &ring) == (long)skip);
        assert_int_equal(tether__shm_take_frame(&p->b, hdr, in, len, &ring), 0); /* empty */
        assert_true(tether__shm_fits(&p->a, TETHER__SHM_HDR + len));
        tether__shm_put_frame(&p->a, hdr, out, len, &ring);
        assert_int_equal(tether__shm_take_frame(&p->b, other, in, len, &ring), 0);
        assert_int_equal(tether__shm_take_frame(&p->b, hdr, in, len + 1, &ring), 0);
        assert_true(tether__shm_unread(&p->b) == TETHER__SHM_HDR + len); /* untouched */
        assert_int_equal(tether__shm_take_frame(&p->b, hdr, in, len, &ring), 1);
        assert_memory_equal(in, out, len);
        assert_true(tether__shm_unread(&p->b) == 0);
        pos += skip + TETHER__SHM_HDR + len;
    }
}

/* A peer whose indices do not add up (more unread than the ring holds) is a broken stream, not a
 * read past the ring. */
static void test_corrupt_indices(void **state)
{
    pair *p = *state;
    unsigned char buf[64];
    int ring;
    /* the maker's ring of the first half is the mapper's rx; its head is the first word */
    *(volatile uint64_t *)p->a.map = 5 * CAP;
    assert_int_equal(tether__shm_read(&p->b, buf, sizeof buf, &ring), -1);
    assert_int_equal(tether__shm_peek(&p->b, buf, 8), 0);
}

/* A buffer of two pieces whose second cannot be touched: a copy that reaches it faults, and the
 * test jumps back to look at what the first piece left published. */
static sigjmp_buf fault_jump;

static void on_fault(int sig)
{
    (void)sig;
    siglongjmp(fault_jump, 1);
}

static unsigned char *half_fenced(size_t piece)
{
    unsigned char *b =
        mmap(NULL, 2 * piece, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(b != MAP_FAILED);
    memset(b, 0x5a, piece);
    assert_int_equal(mprotect(b + piece, piece, PROT_NONE), 0);
    return b;
}

/* A write that does not fit publishes each piece as it lands (TETHER__SHM_PIECE): the reader
 * sees the first piece's bytes while the writer still copies the second. A read publishes each
 * piece it consumed: the writer sees the first piece's room while the reader still copies the
 * second. Shown by copies that fault in their second piece: the first is published by then. A
 * frame that fits is published once, whole, for the reader's small path. */
static void test_pieces_published(void **state)
{
    (void)state;
    const size_t piece = (size_t)TETHER__SHM_PIECE;
    tether__shm a = {0}, b = {0};
    char why[256];
    uint64_t id;
    int ring;
    assert_int_equal(tether__shm_create(&a, 4 * TETHER__SHM_PIECE, &id, why, sizeof why), 0);
    assert_int_equal(tether__shm_attach(&b, id, 4 * TETHER__SHM_PIECE, why, sizeof why), 0);
    struct sigaction act = {.sa_handler = on_fault}, old_segv, old_bus;
    sigemptyset(&act.sa_mask);
    sigaction(SIGSEGV, &act, &old_segv);
    sigaction(SIGBUS, &act, &old_bus); /* macOS reports some protection faults so */

    unsigned char *fill = calloc(1, piece), *src = half_fenced(piece);
    struct iovec v[2] = {{fill, piece}, {src, 4 * piece}};
    assert_true(tether__shm_write(&a, &v[0], 1, &ring) == piece); /* fits: published whole */
    assert_true(tether__shm_written(&b) == TETHER__SHM_PIECE);
    struct iovec two = {src, 2 * piece};
    if (!sigsetjmp(fault_jump, 1)) { /* 2 pieces where 3 fit: nothing shown before the end */
        tether__shm_write(&a, &two, 1, &ring);
        fail_msg("the write read past the readable piece without faulting");
    }
    assert_true(tether__shm_written(&b) == TETHER__SHM_PIECE);
    if (!sigsetjmp(fault_jump, 1)) { /* 4 pieces where 3 fit: in pieces */
        tether__shm_write(&a, &v[1], 1, &ring);
        fail_msg("the write read past the readable piece without faulting");
    }
    assert_true(tether__shm_written(&b) == 2 * TETHER__SHM_PIECE); /* the filler, then a piece */
    munmap(src, 2 * piece);

    unsigned char *dst = half_fenced(piece);
    if (!sigsetjmp(fault_jump, 1)) {
        tether__shm_read(&b, dst, 2 * piece, &ring);
        fail_msg("the read wrote past the writable piece without faulting");
    }
    assert_true(tether__shm_unconsumed(&a) == TETHER__SHM_PIECE); /* the first piece's room */
    munmap(dst, 2 * piece);
    free(fill);

    sigaction(SIGSEGV, &old_segv, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
    tether__shm_close(&a);
    tether__shm_close(&b);
}

/* A writer and a reader on two threads, as two ranks on two CPUs: 24 MiB in writes of random
 * lengths, from a byte to twice the ring (those go in pieces, as room appears), read in random
 * lengths, every byte checked against its position in the stream. A piece published before its
 * bytes were copied, or room released before they were read, shows as a wrong byte. */
#define STREAM_TOTAL ((size_t)24 << 20)
#define STREAM_CAP (4 * TETHER__SHM_PIECE)

static unsigned char stream_byte(size_t pos)
{
    return (unsigned char)(pos * 2654435761u >> 13);
}

static size_t next_len(unsigned *seed, size_t max)
{
    *seed = *seed * 1103515245u + 12345u;
    size_t r = *seed >> 4;
    return 1 + (r % 4 == 0 ? r % max : r % 4096); /* mostly small, now and then up to max */
}

static void *stream_writer(void *arg)
{
    tether__shm *w = arg;
    unsigned char *buf = malloc(2 * STREAM_CAP);
    unsigned seed = 11;
    int ring;
    for (size_t pos = 0; pos < STREAM_TOTAL;) {
        size_t len = next_len(&seed, 2 * STREAM_CAP);
        if (len > STREAM_TOTAL - pos)
            len = STREAM_TOTAL - pos;
        for (size_t i = 0; i < len; i++)
            buf[i] = stream_byte(pos + i);
        for (size_t done = 0; done < len;) { /* a header-like piece and the rest, as frames go */
            struct iovec v[2] = {{buf + done, (len - done) < 32 ? len - done : 32},
                                 {buf + done + 32, len - done > 32 ? len - done - 32 : 0}};
            size_t k = tether__shm_write(w, v, 2, &ring);
            if (!k)
                sched_yield();
            done += k;
        }
        pos += len;
    }
    free(buf);
    return NULL;
}

static void test_stream_threads(void **state)
{
    (void)state;
    tether__shm a = {0}, b = {0};
    char why[256];
    uint64_t id;
    int ring;
    assert_int_equal(tether__shm_create(&a, STREAM_CAP, &id, why, sizeof why), 0);
    assert_int_equal(tether__shm_attach(&b, id, STREAM_CAP, why, sizeof why), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, stream_writer, &a), 0);
    unsigned char *buf = malloc(2 * STREAM_CAP);
    unsigned seed = 23;
    size_t wrong = 0, first_wrong = 0;
    for (size_t pos = 0; pos < STREAM_TOTAL;) {
        size_t want = next_len(&seed, 2 * STREAM_CAP);
        long k =
            tether__shm_read(&b, buf, want < STREAM_TOTAL - pos ? want : STREAM_TOTAL - pos, &ring);
        assert_true(k >= 0);
        if (!k)
            sched_yield();
        for (long i = 0; i < k; i++)
            if (buf[i] != stream_byte(pos + (size_t)i) && !wrong++)
                first_wrong = pos + (size_t)i;
        pos += (size_t)k;
    }
    pthread_join(t, NULL);
    if (wrong)
        fail_msg("%zu bytes wrong, the first at stream position %zu", wrong, first_wrong);
    assert_true(tether__shm_unread(&b) == 0);
    free(buf);
    tether__shm_close(&a);
    tether__shm_close(&b);
}

/* The name lives only until the peer maps it: a crash afterwards leaves nothing in /dev/shm. */
static void test_name_removed(void **state)
{
    (void)state;
    tether__shm a = {0}, b = {0}, c = {0};
    char why[256], name[TETHER__SHM_NAME_MAX];
    uint64_t id;
    assert_int_equal(tether__shm_create(&a, CAP, &id, why, sizeof why), 0);
    memcpy(name, a.name, sizeof name);
    int fd = shm_open(name, O_RDWR, 0600);
    assert_true(fd >= 0); /* named while unanswered */
    close(fd);
    assert_int_equal(tether__shm_attach(&b, id, 2 * CAP, why, sizeof why), -1); /* too small */
    assert_non_null(strstr(why, "not the"));
    assert_int_equal(tether__shm_attach(&c, id, CAP, why, sizeof why), -1); /* name gone */
    assert_non_null(strstr(why, "shm_open"));
    assert_true(shm_open(name, O_RDWR, 0600) < 0 && errno == ENOENT);
    tether__shm_close(&a);
}

/* TETHER_SHM and TETHER_SHM_RING. */
static void test_config(void **state)
{
    (void)state;
    uint64_t cap;
    unsetenv("TETHER_SHM");
    unsetenv("TETHER_SHM_RING");
    assert_int_equal(tether__shm_config(4, &cap), 0);
    assert_true(cap == 1 << 20);
    assert_int_equal(tether__shm_config(16, &cap), 0);
    assert_true(cap == 256 << 10); /* 64 MiB / 256 pairs' worth */
    assert_true(tether__shm_ring_default(1000) == 64 << 10);
    setenv("TETHER_SHM_RING", "65536", 1);
    assert_int_equal(tether__shm_config(4, &cap), 0);
    assert_true(cap == 65536);
    setenv("TETHER_SHM_RING", "65537", 1);
    assert_true(tether__shm_config(4, &cap) < 0);
    setenv("TETHER_SHM_RING", "65536", 1);
    setenv("TETHER_SHM", "0", 1);
    assert_int_equal(tether__shm_config(4, &cap), 0);
    assert_true(cap == 0);
    setenv("TETHER_SHM", "2", 1);
    assert_true(tether__shm_config(4, &cap) < 0);
    unsetenv("TETHER_SHM");
    unsetenv("TETHER_SHM_RING");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stream_wraps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_doorbells, setup, teardown),
        cmocka_unit_test_setup_teardown(test_peek, setup, teardown),
        cmocka_unit_test_setup_teardown(test_frames, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_indices, setup, teardown),
        cmocka_unit_test(test_pieces_published),
        cmocka_unit_test(test_stream_threads),
        cmocka_unit_test(test_name_removed),
        cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
