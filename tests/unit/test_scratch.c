/* tests/unit/test_scratch.c - a group's scratch pool (core/scratch.c): blocks come back for the
 * next call, the smallest fitting block is taken, overflow and oversized blocks are not cached. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/scratch.h"

static int cached(const tether__scratch_pool *pool, const void *p)
{
    for (int i = 0; i < TETHER__SCRATCH_SLOTS; i++)
        if (pool->slot[i].p == p)
            return 1;
    return 0;
}

/* Take a 64-byte block for every slot (all busy), or give them all back. */
static void take_all(tether__scratch_pool *pool, void *blocks[TETHER__SCRATCH_SLOTS])
{
    for (int i = 0; i < TETHER__SCRATCH_SLOTS; i++)
        assert_non_null(blocks[i] = tether__pool_get(pool, 64));
}

static void give_all(tether__scratch_pool *pool, void *blocks[TETHER__SCRATCH_SLOTS])
{
    for (int i = 0; i < TETHER__SCRATCH_SLOTS; i++)
        tether__pool_put(pool, blocks[i]);
}

static void test_reuse(void **state)
{
    (void)state;
    tether__scratch_pool pool = {0};
    char *a = tether__pool_get(&pool, 1000);
    assert_non_null(a);
    memset(a, 1, 1000);
    tether__pool_put(&pool, a);
    assert_ptr_equal(tether__pool_get(&pool, 1000), a);   /* the same block, next call */
    assert_ptr_not_equal(tether__pool_get(&pool, 10), a); /* busy: another one */
    tether__pool_clear(&pool);
    assert_null(pool.slot[0].p);
}

static void test_smallest_fit(void **state)
{
    (void)state;
    tether__scratch_pool pool = {0};
    void *big = tether__pool_get(&pool, 1 << 20), *small = tether__pool_get(&pool, 4096);
    tether__pool_put(&pool, big);
    tether__pool_put(&pool, small);
    assert_ptr_equal(tether__pool_get(&pool, 100), small);
    assert_ptr_equal(tether__pool_get(&pool, 100), big);
    tether__pool_clear(&pool);
}

static void test_grows_a_free_block(void **state)
{
    (void)state;
    tether__scratch_pool pool = {0};
    void *blocks[TETHER__SCRATCH_SLOTS];
    take_all(&pool, blocks);
    give_all(&pool, blocks);
    char *big = tether__pool_get(&pool, 1 << 16); /* no block fits: one is replaced, not added */
    assert_non_null(big);
    memset(big, 2, 1 << 16);
    assert_true(cached(&pool, big));
    int n = 0;
    for (int i = 0; i < TETHER__SCRATCH_SLOTS; i++)
        n += pool.slot[i].p != NULL;
    assert_int_equal(n, TETHER__SCRATCH_SLOTS);
    tether__pool_put(&pool, big);
    tether__pool_clear(&pool);
}

static void test_overflow_and_oversized(void **state)
{
    (void)state;
    tether__scratch_pool pool = {0};
    void *blocks[TETHER__SCRATCH_SLOTS];
    take_all(&pool, blocks);
    void *extra = tether__pool_get(&pool, 64); /* every slot busy: a plain block */
    assert_non_null(extra);
    assert_false(cached(&pool, extra));
    tether__pool_put(&pool, extra); /* freed (ASan would report a leak otherwise) */
    give_all(&pool, blocks);
    void *huge = tether__pool_get(&pool, TETHER__SCRATCH_KEEP_MAX + 1);
    assert_non_null(huge);
    tether__pool_put(&pool, huge); /* too large to keep */
    assert_false(cached(&pool, huge));
    tether__pool_put(&pool, NULL);
    tether__pool_clear(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reuse),
        cmocka_unit_test(test_smallest_fit),
        cmocka_unit_test(test_grows_a_free_block),
        cmocka_unit_test(test_overflow_and_oversized),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
