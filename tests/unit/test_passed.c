/* tests/unit/test_passed.c - the calls a rank has passed (core/passed.c): which messages are stale
 * (earlier calls of a group it has made calls on, by a signed difference of seqs; never
 * point-to-point or control traffic, never a group it has no record of or two records share), and
 * when a transport looks again at what it keeps, reading first after calls in a row that received
 * nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/clock.h"
#include "core/passed.h"

static tether__tag tag(uint32_t group, uint32_t seq)
{
    return (tether__tag){.group = group, .seq = seq, .step = 0, .sig = 0x1234};
}

static void test_stale_by_the_receivers_progress(void **state)
{
    (void)state;
    char why[512] = "";
    tether__passed *p = tether__passed_new();
    tether__passed_group *world = NULL, *child = NULL;
    assert_non_null(p);
    assert_false(tether__passed_stale(p, tag(0, 0), 1, why, sizeof why)); /* no call made yet */
    tether__passed_set(p, &world, 0, 5);                                  /* calls 0-4 over */
    assert_non_null(world);
    assert_false(tether__passed_stale(p, tag(0, 5), 1, why, sizeof why)); /* the call running */
    assert_false(tether__passed_stale(p, tag(0, 6), 1, why, sizeof why)); /* a peer ahead */
    assert_true(tether__passed_stale(p, tag(0, 4), 1, why, sizeof why));
    assert_non_null(strstr(why, "rank 1 sent a message of call 4 of group 00000000"));
    assert_non_null(strstr(why, "disagree"));
    /* point-to-point and control traffic have counters of their own */
    assert_false(tether__passed_stale(p, tag(0, 1 | TETHER__TAG_P2P), 1, why, sizeof why));
    assert_false(tether__passed_stale(p, tag(0, 1 | TETHER__TAG_CTRL), 1, why, sizeof why));
    /* a child group numbers its calls on its own; unknown until its first call here */
    assert_false(tether__passed_stale(p, tag(0xabc, 0), 2, why, sizeof why));
    tether__passed_set(p, &child, 0xabc, 1);
    assert_true(tether__passed_stale(p, tag(0xabc, 0), 2, why, sizeof why));
    assert_false(tether__passed_stale(p, tag(0xabc, 1), 2, why, sizeof why));
    tether__passed_drop(p, child); /* freed with its group: nothing judged for it again */
    assert_false(tether__passed_stale(p, tag(0xabc, 0), 2, why, sizeof why));
    tether__passed_free(p);
}

static void test_order_and_shared_ids(void **state)
{
    (void)state;
    char why[512];
    tether__passed *p = tether__passed_new();
    tether__passed_group *a = NULL, *b = NULL;
    tether__passed_set(p, &a, 7, 2);
    assert_true(tether__passed_stale(p, tag(7, 1), 0, why, sizeof why));
    assert_false(tether__passed_stale(p, tag(7, 2), 0, why, sizeof why));
    /* the order is a signed difference in the wrap of TETHER__TAG_SEQ_MASK (calls are numbered
     * below the reserved bits): past the wrap, the calls just before it are behind */
    tether__passed_set(p, &a, 7, 1);
    assert_true(tether__passed_stale(p, tag(7, TETHER__TAG_SEQ_MASK), 0, why, sizeof why));
    assert_true(strstr(why, "up to 0 of that group") != NULL);
    assert_false(tether__passed_stale(p, tag(7, 1), 0, why, sizeof why));
    tether__passed_set(p, &a, 7, TETHER__TAG_SEQ_MASK);
    assert_false(tether__passed_stale(p, tag(7, TETHER__TAG_SEQ_MASK), 0, why, sizeof why));
    assert_false(tether__passed_stale(p, tag(7, 0), 0, why, sizeof why));
    assert_true(tether__passed_stale(p, tag(7, TETHER__TAG_SEQ_MASK - 1), 0, why, sizeof why));
    tether__passed_set(p, &a, 7, 1);
    /* two groups of this process with one id cannot tell whose call a message is */
    tether__passed_set(p, &b, 7, 5);
    assert_false(tether__passed_stale(p, tag(7, 0), 0, why, sizeof why));
    tether__passed_drop(p, b);
    assert_true(tether__passed_stale(p, tag(7, 0), 0, why, sizeof why));
    assert_false(tether__passed_stale(NULL, tag(7, 0), 0, why, sizeof why));
    tether__passed_free(p);
}

static void test_look(void **state)
{
    (void)state;
    tether__passed *p = tether__passed_new();
    tether__passed_group *g = NULL;
    tether__passed_seen s = {0};
    uint64_t recvs = 0;
    assert_int_equal(tether__passed_look(p, &s, recvs), TETHER__PASSED_NONE);
    /* a rank that receives in every call only looks at what it keeps, once per call */
    for (uint32_t k = 1; k <= 10; k++) {
        recvs++;
        tether__passed_set(p, &g, 0, k);
        assert_int_equal(tether__passed_look(p, &s, recvs), TETHER__PASSED_SWEEP);
        assert_int_equal(tether__passed_look(p, &s, recvs), TETHER__PASSED_NONE);
    }
    /* a root that receives nothing reads what waits after TETHER__PASSED_QUIET calls... */
    uint32_t k = 10;
    int64_t before = tether__coarse_us(); /* the drain's time is no earlier */
    for (int i = 1; i <= TETHER__PASSED_QUIET; i++) {
        tether__passed_set(p, &g, 0, ++k);
        assert_int_equal(tether__passed_look(p, &s, recvs),
                         i == TETHER__PASSED_QUIET ? TETHER__PASSED_DRAIN : TETHER__PASSED_SWEEP);
    }
    /* ...and then at most once in TETHER__PASSED_DRAIN_US of the coarse clock, at the first call
     * past it */
    for (int i = 0; i < 4 * TETHER__PASSED_QUIET; i++) {
        tether__passed_set(p, &g, 0, ++k);
        tether__passed_action a = tether__passed_look(p, &s, recvs);
        if (tether__coarse_us() - before < TETHER__PASSED_DRAIN_US)
            assert_int_equal(a, TETHER__PASSED_SWEEP);
    }
    int64_t after = tether__coarse_us(); /* the last drain's time is no later */
    struct timespec pause = {0, 200 * 1000L};
    while (tether__coarse_us() - after < TETHER__PASSED_DRAIN_US)
        nanosleep(&pause, NULL);
    tether__passed_set(p, &g, 0, ++k);
    assert_int_equal(tether__passed_look(p, &s, recvs), TETHER__PASSED_DRAIN);
    /* a receive posted starts the count again */
    nanosleep(&pause, NULL);
    tether__passed_set(p, &g, 0, ++k);
    assert_int_equal(tether__passed_look(p, &s, ++recvs), TETHER__PASSED_SWEEP);
    assert_int_equal(tether__passed_look(NULL, &s, recvs), TETHER__PASSED_NONE);
    tether__passed_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stale_by_the_receivers_progress),
        cmocka_unit_test(test_order_and_shared_ids),
        cmocka_unit_test(test_look),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
