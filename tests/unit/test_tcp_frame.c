/* tests/unit/test_tcp_frame.c - the TCP engine's pure parts: frames, stripes, matching, hello. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "backends/net/frame.h"
#include "backends/net/handshake.h"
#include "tests/support/handshake_client.h"

static void test_frame_layout(void **state)
{
    (void)state;
    tether__frame f = {
        .tag = {.group = 0x11223344u, .seq = 0x80000005u, .step = 7, .sig = 0xdeadbeefu},
        .len = 0x0102030405060708ull,
        .type = TETHER__FRAME_DATA,
        .code = 0};
    unsigned char b[TETHER__FRAME_SIZE];
    tether__frame_encode(&f, b);
    /* little-endian at fixed offsets: machines of either byte order read the same header */
    assert_int_equal(b[0], 0x44);
    assert_int_equal(b[3], 0x11);
    assert_int_equal(b[7], 0x80);
    assert_int_equal(b[16], 0x08);
    assert_int_equal(b[23], 0x01);
    tether__frame g;
    assert_int_equal(tether__frame_decode(b, &g), 0);
    assert_int_equal(g.tag.group, f.tag.group);
    assert_int_equal(g.tag.seq, f.tag.seq);
    assert_int_equal(g.tag.step, f.tag.step);
    assert_int_equal(g.tag.sig, f.tag.sig);
    assert_true(g.len == f.len);
    assert_int_equal(g.type, TETHER__FRAME_DATA);
}

static void test_frame_abort_code(void **state)
{
    (void)state;
    tether__frame f = {.len = 12, .type = TETHER__FRAME_ABORT, .code = TETHER_EMISMATCH}, g;
    unsigned char b[TETHER__FRAME_SIZE];
    tether__frame_encode(&f, b);
    assert_int_equal(tether__frame_decode(b, &g), 0);
    assert_int_equal(g.type, TETHER__FRAME_ABORT);
    assert_int_equal(g.code, TETHER_EMISMATCH);
}

static void test_frame_garbage(void **state)
{
    (void)state;
    unsigned char b[TETHER__FRAME_SIZE];
    tether__frame g;
    memset(b, 'A', sizeof b); /* a stray writing text */
    assert_int_equal(tether__frame_decode(b, &g), -1);
    memset(b, 0, sizeof b);
    assert_int_equal(tether__frame_decode(b, &g), -1);
}

/* Stripes of every link must tile [0, len) in link order. */
static void check_tiling(uint64_t len, int nlinks)
{
    uint64_t next = 0;
    for (int k = 0; k < nlinks; k++) {
        uint64_t off, n;
        if (!tether__stripe(len, nlinks, k, &off, &n))
            continue;
        assert_true(off == next);
        next = off + n;
    }
    assert_true(next == len);
}

static void test_stripe_small_goes_whole(void **state)
{
    (void)state;
    uint64_t off, n;
    tether__stripe(1000, 3, 0, &off, &n);
    assert_true(off == 0 && n == 1000);
    assert_int_equal(tether__stripe(1000, 3, 1, &off, &n), 0);
    assert_true(n == 0);
    assert_int_equal(tether__stripe(0, 2, 0, &off, &n), 1); /* an empty message still travels */
    assert_true(off == 0 && n == 0);
    assert_int_equal(tether__stripe(TETHER__STRIPE_MIN - 1, 2, 1, &off, &n), 0);
}

static void test_stripe_large_splits(void **state)
{
    (void)state;
    uint64_t off, n;
    tether__stripe(8u << 20, 2, 0, &off, &n);
    assert_true(off == 0 && n == 4u << 20);
    tether__stripe(8u << 20, 2, 1, &off, &n);
    assert_true(off == 4u << 20 && n == 4u << 20);
    tether__stripe((8u << 20) + 12345, 3, 1, &off, &n);
    assert_true(off % 4096 == 0 && n > 0);
    uint64_t lens[] = {TETHER__STRIPE_MIN, TETHER__STRIPE_MIN + 1, (8u << 20) + 12345, 3ull << 31};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        for (int k = 1; k <= 4; k++)
            check_tiling(lens[i], k);
    /* more links than 4 KiB shares: whole on link 0 rather than empty stripes */
    tether__stripe(TETHER__STRIPE_MIN, 1000, 0, &off, &n);
    assert_true(off == 0 && n == TETHER__STRIPE_MIN);
}

/* A routed message's chunks tile it, and only the next chunk in order continues it. */
static void test_route_chunks(void **state)
{
    (void)state;
    const uint64_t C = TETHER__ROUTE_CHUNK, lens[] = {0, 1, C - 1, C, C + 1, 5 * C, 5 * C + 7};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        uint64_t len = lens[i], got = tether__route_first(len), chunks = 1;
        assert_true(got <= C && got == (len < C ? len : C));
        while (got < len) {
            uint64_t n = tether__route_first(len - got);
            assert_true(tether__route_next_ok(len, got, n));
            assert_false(tether__route_next_ok(len, got, n + 1));          /* too long */
            assert_false(n > 1 && tether__route_next_ok(len, got, n - 1)); /* cut short */
            got += n;
            chunks++;
        }
        assert_int_equal(got, len);
        assert_int_equal(chunks, tether__route_chunks(len));
        assert_false(tether__route_next_ok(len, got, 0)); /* nothing continues a whole message */
        assert_false(tether__route_next_ok(len, got, 1));
    }
}

static tether__rxmsg msg(uint32_t group, uint32_t seq, uint32_t step, uint32_t sig, uint64_t len)
{
    return (tether__rxmsg){.tag = {.group = group, .seq = seq, .step = step, .sig = sig},
                           .msglen = len};
}

static void test_match_in_order(void **state)
{
    (void)state;
    tether__rxq q = {0};
    tether__rxmsg a = msg(0, 1, 0, 9, 8), b = msg(0, 1, 0, 9, 8), c = msg(0, 1, 1, 9, 8), *m;
    tether__tag t = {.group = 0, .seq = 1, .step = 0, .sig = 9};
    assert_int_equal(tether__rxq_match(&q, t, 8, &m), TETHER__MATCH_NONE);
    tether__rxq_push(&q, &a);
    tether__rxq_push(&q, &c);
    tether__rxq_push(&q, &b);
    assert_int_equal(tether__rxq_match(&q, t, 8, &m), TETHER__MATCH_OK);
    assert_ptr_equal(m, &a); /* first of the same tag first */
    assert_int_equal(tether__rxq_match(&q, t, 8, &m), TETHER__MATCH_OK);
    assert_ptr_equal(m, &b);
    assert_int_equal(tether__rxq_match(&q, t, 8, &m), TETHER__MATCH_NONE);
    t.step = 1;
    assert_int_equal(tether__rxq_match(&q, t, 8, &m), TETHER__MATCH_OK);
    assert_ptr_equal(m, &c);
    assert_null(q.head);
    assert_null(q.tail);
    tether__rxq_push(&q, &a); /* the tail was reset: pushing again works */
    assert_ptr_equal(q.head, &a);
}

static void test_match_mismatches(void **state)
{
    (void)state;
    tether__rxq q = {0};
    tether__rxmsg a = msg(5, 3, 2, 0xaaaa, 64), *m;
    tether__rxq_push(&q, &a);
    /* same tag, other length */
    tether__tag t = {.group = 5, .seq = 3, .step = 2, .sig = 0xaaaa};
    assert_int_equal(tether__rxq_match(&q, t, 65, &m), TETHER__MATCH_LEN);
    assert_ptr_equal(m, &a);
    assert_ptr_equal(q.head, &a); /* a mismatch leaves the queue alone */
    /* same call, another signature: a mismatch even at another step */
    t.sig = 0xbbbb;
    t.step = 0;
    assert_int_equal(tether__rxq_match(&q, t, 64, &m), TETHER__MATCH_SIG);
    assert_ptr_equal(m, &a);
    /* another call or group: no relation */
    t.seq = 4;
    assert_int_equal(tether__rxq_match(&q, t, 64, &m), TETHER__MATCH_NONE);
    t.seq = 3;
    t.group = 6;
    assert_int_equal(tether__rxq_match(&q, t, 64, &m), TETHER__MATCH_NONE);
}

static tether__hello hello(int rank, int size)
{
    tether__hello h;
    memset(&h, 0, sizeof h);
    h.version = TETHER__PROTO_VERSION;
    h.rank = rank;
    h.size = size;
    h.link = 1;
    h.nlinks = 2;
    return h;
}

static void test_hello_round_trip(void **state)
{
    (void)state;
    tether__hello h = hello(3, 4), g;
    strcpy(h.announce_host, "10.0.0.3");
    h.announce_port = 40000;
    memset(h.nonce, 0xa5, sizeof h.nonce);
    memset(h.proof, 0x5a, sizeof h.proof);
    unsigned char b[TETHER__HELLO_SIZE];
    tether__hello_encode(&h, b);
    assert_int_equal(tether__hello_decode(b, &g), 0);
    assert_int_equal(g.rank, 3);
    assert_int_equal(g.size, 4);
    assert_int_equal(g.link, 1);
    assert_int_equal(g.nlinks, 2);
    assert_int_equal(g.announce_port, 40000);
    assert_string_equal(g.announce_host, "10.0.0.3");
    assert_memory_equal(g.nonce, h.nonce, sizeof h.nonce);
    assert_memory_equal(g.proof, h.proof, sizeof h.proof);
}

/* The proofs: right only for the token and the exact messages; a refusal holds nothing more than
 * the magic, the version and the status. */
static void test_handshake_proofs(void **state)
{
    (void)state;
    tether__hs_msgs m;
    tether__hello h = hello(1, 4);
    memset(h.nonce, 1, sizeof h.nonce);
    tether__hello_encode(&h, m[TETHER__HS_HELLO]);
    h = hello(0, 4);
    memset(h.nonce, 2, sizeof h.nonce);
    tether__hello_encode(&h, m[TETHER__HS_CHALLENGE]);
    tether__hs_prove("secret", m, TETHER__HS_CHALLENGE);
    assert_true(tether__hs_verify("secret", m, TETHER__HS_CHALLENGE));
    assert_false(tether__hs_verify("secreT", m, TETHER__HS_CHALLENGE));
    assert_false(tether__hs_verify("", m, TETHER__HS_CHALLENGE));
    /* a proof made for one step does not pass for another */
    memcpy(m[TETHER__HS_PROOF], m[TETHER__HS_CHALLENGE], TETHER__HELLO_SIZE);
    assert_false(tether__hs_verify("secret", m, TETHER__HS_PROOF));
    /* any byte of an earlier message changed: the proof fails */
    for (size_t i = 0; i < TETHER__HELLO_SIZE; i += 7) {
        m[TETHER__HS_HELLO][i] ^= 1;
        assert_false(tether__hs_verify("secret", m, TETHER__HS_CHALLENGE));
        m[TETHER__HS_HELLO][i] ^= 1;
    }
    assert_true(tether__hs_verify("secret", m, TETHER__HS_CHALLENGE));
    /* the token never appears in a message, and a refusal carries only magic, version, status */
    assert_false(tether__test_holds(&m[0][0], sizeof m, "secret"));
    unsigned char r[TETHER__HELLO_SIZE], zero[TETHER__HELLO_SIZE] = {0};
    tether__hs_status_msg(TETHER__HS_BAD_TOKEN, r);
    assert_int_equal(tether__hello_decode(r, &h), 0);
    assert_int_equal(h.status, TETHER__HS_BAD_TOKEN);
    assert_int_equal(h.version, TETHER__PROTO_VERSION);
    assert_memory_equal(r + 12, zero, sizeof r - 12);
}

static void test_hello_garbage_and_checks(void **state)
{
    (void)state;
    unsigned char b[TETHER__HELLO_SIZE];
    tether__hello mine = hello(0, 4), g;
    char why[256];
    memset(b, 0xff, sizeof b);
    assert_int_equal(tether__hello_decode(b, &g), -1);
    /* the right magic with unterminated text fields still decodes to terminated strings */
    tether__hello h = hello(1, 4);
    tether__hello_encode(&h, b);
    memset(b + 32, 'x', sizeof b - 32);
    assert_int_equal(tether__hello_decode(b, &g), 0);
    assert_true(strlen(g.announce_host) < TETHER__ANNOUNCE_MAX);
    assert_true(strlen(g.backend) < TETHER__BACKEND_MAX);
    assert_true(strlen(g.settings) < TETHER__AGREED_MAX);

    h = hello(1, 4);
    assert_int_equal(tether__hello_check(&h, &mine, why, sizeof why), TETHER__HS_OK);
    h = hello(1, 5);
    assert_int_equal(tether__hello_check(&h, &mine, why, sizeof why), TETHER__HS_BAD_SIZE);
    assert_non_null(strstr(why, "5"));
    h.version = TETHER__PROTO_VERSION + 1;
    assert_int_equal(tether__hello_check(&h, &mine, why, sizeof why), TETHER__HS_BAD_VERSION);
    /* backend and settings travel, and differing ones are refused naming both values */
    h = hello(1, 4);
    strcpy(h.backend, "ring");
    strcpy(mine.backend, "mesh");
    tether__hello_encode(&h, b);
    assert_int_equal(tether__hello_decode(b, &g), 0);
    assert_string_equal(g.backend, "ring");
    assert_int_equal(tether__hello_check(&g, &mine, why, sizeof why), TETHER__HS_BAD_SETTINGS);
    assert_non_null(strstr(why, "\"ring\""));
    assert_non_null(strstr(why, "\"mesh\""));
    strcpy(h.backend, "mesh");
    strcpy(h.settings, "wire=bf16");
    strcpy(mine.settings, "wire=fp32");
    assert_int_equal(tether__hello_check(&h, &mine, why, sizeof why), TETHER__HS_BAD_SETTINGS);
    assert_non_null(strstr(why, "wire=bf16"));
    assert_non_null(strstr(why, "wire=fp32"));
}

/* Unexpected-frame blocks: reused when they fit, the smallest first, the larger kept when full,
 * blocks over the keep limit freed. */
static void test_rxcache(void **state)
{
    (void)state;
    tether__rxcache c = {0};
    tether__rxmsg *a = tether__rxcache_get(&c, 1000);
    assert_non_null(a);
    assert_int_equal(a->heap, 1);
    assert_int_equal(a->len, 1000);
    assert_true(a->cap >= 1000);
    memset(a->buf, 7, a->len + 1); /* the terminator byte is room too */
    tether__rxcache_put(&c, a);
    tether__rxmsg *b = tether__rxcache_get(&c, 2000); /* same 64 KiB grain: the same block */
    assert_ptr_equal(b, a);
    assert_int_equal(b->len, 2000);
    assert_null(b->req);
    assert_int_equal(b->got, 0);
    tether__rxmsg *m[TETHER__RXCACHE_SLOTS + 1];
    for (int i = 0; i <= TETHER__RXCACHE_SLOTS; i++)
        m[i] = tether__rxcache_get(&c, (uint64_t)(i + 1) << 16);
    for (int i = 0; i <= TETHER__RXCACHE_SLOTS; i++)
        tether__rxcache_put(&c, m[i]); /* one too many: the smallest goes */
    for (int i = 0; i < TETHER__RXCACHE_SLOTS; i++)
        assert_true(c.slot[i] && c.slot[i]->cap > (1u << 16));
    tether__rxmsg *big = tether__rxcache_get(&c, TETHER__RXCACHE_KEEP_MAX + 1);
    assert_non_null(big);
    tether__rxcache_put(&c, big); /* too large to keep: freed */
    for (int i = 0; i < TETHER__RXCACHE_SLOTS; i++)
        assert_ptr_not_equal(c.slot[i], big);
    tether__rxcache_put(&c, b);
    tether__rxcache_clear(&c);
    for (int i = 0; i < TETHER__RXCACHE_SLOTS; i++)
        assert_null(c.slot[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_layout),        cmocka_unit_test(test_frame_abort_code),
        cmocka_unit_test(test_frame_garbage),       cmocka_unit_test(test_stripe_small_goes_whole),
        cmocka_unit_test(test_stripe_large_splits), cmocka_unit_test(test_route_chunks),
        cmocka_unit_test(test_match_in_order),      cmocka_unit_test(test_match_mismatches),
        cmocka_unit_test(test_hello_round_trip),    cmocka_unit_test(test_hello_garbage_and_checks),
        cmocka_unit_test(test_handshake_proofs),    cmocka_unit_test(test_rxcache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
