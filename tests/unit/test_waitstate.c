/* tests/unit/test_waitstate.c - the wait-state records and verdicts (core/waitstate.c) between
 * record tables of a few ranks, their heartbeats played by pack and merge: a cycle of settled waits
 * is a deadlock naming it (or lost data, all in one collective), a wait on a rank busy outside
 * tether or on one whose bytes move is not, a rank that failed its last call fails its waiters
 * after a period, and malformed bytes from a peer are refused whole with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "core/errors.h"
#include "core/waitstate.h"
#include "core/wire.h"

#define PERIOD_MS 20
#define MAXN 4

typedef struct world {
    int n;
    tether__waitstate *ws[MAXN];
    uint8_t pending[MAXN][1]; /* the peers each rank has requests pending with */
    uint64_t moved[MAXN];
} world;

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void world_new(world *w, int n)
{
    memset(w, 0, sizeof *w);
    w->n = n;
    for (int r = 0; r < n; r++)
        assert_non_null(w->ws[r] = tether__ws_new(r, n, PERIOD_MS));
}

static void world_free(world *w)
{
    for (int r = 0; r < w->n; r++)
        tether__ws_free(w->ws[r]);
}

/* One round of heartbeats: every rank packs its records and every other rank merges them. */
static void beat(world *w)
{
    uint8_t blob[TETHER__WS_BLOB_MAX];
    char why[256];
    for (int r = 0; r < w->n; r++) {
        size_t len = tether__ws_pack(w->ws[r], w->pending[r], w->moved[r], blob, sizeof blob);
        assert_true(len > 0);
        for (int p = 0; p < w->n; p++)
            if (p != r)
                assert_int_equal(tether__ws_merge(w->ws[p], r, blob, len, why, sizeof why), 0);
    }
}

/* Heartbeats for periods, a period apart. */
static void beat_for(world *w, int periods)
{
    for (int i = 0; i < periods; i++) {
        beat(w);
        pause_ms(PERIOD_MS);
    }
    beat(w);
}

/* Rank r waits on peer in a receive with tag. */
static void wait_on(world *w, int r, int peer, int tag)
{
    tether__ws_wait_begin(w->ws[r], 0, 1, "recv", peer, tag, NULL, 0);
    w->pending[r][0] |= (uint8_t)(1u << peer);
}

static int verdict(world *w, int r, char *why, size_t n)
{
    why[0] = '\0';
    pause_ms(PERIOD_MS / 4 + 1); /* the verdict looks at most four times a period */
    return tether__ws_verdict(w->ws[r], why, n);
}

static void two_rank_cycle_is_named(void **state)
{
    (void)state;
    world w;
    char why[512];
    world_new(&w, 2);
    wait_on(&w, 0, 1, 7);
    wait_on(&w, 1, 0, 3);
    beat(&w);
    assert_int_equal(verdict(&w, 0, why, sizeof why), TETHER_OK); /* not settled yet */
    beat_for(&w, TETHER__WS_STABLE + 1);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(verdict(&w, r, why, sizeof why), TETHER_EDEADLOCK);
        assert_non_null(strstr(why, "rank 0 waits for rank 1 in recv (tag 7)"));
        assert_non_null(strstr(why, "rank 1 waits for rank 0 in recv (tag 3)"));
    }
    world_free(&w);
}

/* Both ranks in the same collective, waiting on each other with nothing moving: the program's
 * order is right, so data was lost on the way (TETHER_ENET), not a deadlock. */
static void one_call_stall_is_lost_data(void **state)
{
    (void)state;
    world w;
    char why[512];
    world_new(&w, 2);
    wait_on(&w, 0, 1, -1);
    wait_on(&w, 1, 0, -1);
    beat_for(&w, TETHER__WS_STABLE + 1);
    assert_int_equal(verdict(&w, 0, why, sizeof why), TETHER_ENET);
    assert_non_null(strstr(why, "stalled inside one call: rank 0 waits for rank 1 in recv (group "
                                "00000000, call 1)"));
    assert_non_null(strstr(why, "data was lost on the way"));
    world_free(&w);
}

/* Rank 2 waits on rank 0, which is busy outside tether: nobody is deadlocked, however long. And a
 * cycle whose bytes keep moving is not one either. */
static void busy_rank_and_moving_bytes_are_not(void **state)
{
    (void)state;
    world w;
    char why[512];
    world_new(&w, 3);
    wait_on(&w, 1, 0, 0);
    wait_on(&w, 2, 1, 0);
    beat_for(&w, TETHER__WS_STABLE + 2);
    assert_int_equal(verdict(&w, 1, why, sizeof why), TETHER_OK);
    assert_int_equal(verdict(&w, 2, why, sizeof why), TETHER_OK);
    world_free(&w);

    world_new(&w, 2);
    wait_on(&w, 0, 1, 0);
    wait_on(&w, 1, 0, 0);
    for (int i = 0; i < TETHER__WS_STABLE + 2; i++) {
        w.moved[1] += 4096; /* a large message on its way */
        beat(&w);
        pause_ms(PERIOD_MS);
        assert_int_equal(verdict(&w, 0, why, sizeof why), TETHER_OK);
    }
    world_free(&w);
}

/* A receive from any source waits on every member of its group: the whole group must wait. */
static void any_source_waits_on_the_group(void **state)
{
    (void)state;
    world w;
    char why[512];
    static const int members[] = {0, 1, 2};
    world_new(&w, 3);
    tether__ws_wait_begin(w.ws[0], 0, 1, "recv from any source", TETHER__WS_ANY, 0, members, 3);
    wait_on(&w, 1, 0, 0);
    beat_for(&w, TETHER__WS_STABLE + 1);
    assert_int_equal(verdict(&w, 0, why, sizeof why), TETHER_OK); /* rank 2 may still send */
    wait_on(&w, 2, 1, 0);
    beat_for(&w, TETHER__WS_STABLE + 1);
    assert_int_equal(verdict(&w, 0, why, sizeof why), TETHER_EDEADLOCK);
    tether__ws_wait_end(w.ws[0], TETHER__WS_ANY, 1);
    world_free(&w);
}

/* Rank 1 failed its all_reduce and went on: rank 0, waiting on it, fails with its error once it
 * has had a period to call again; a rank that called again is waited for. Its ends before and
 * after, alike, skip the lock (tether__ws_end) but never hide the failure or its end. */
static void failed_rank_fails_its_waiters(void **state)
{
    (void)state;
    world w;
    char why[512];
    static const char name[] = "all_reduce";
    tether__ws_end end = {0};
    world_new(&w, 2);
    tether__ws_call_end(w.ws[1], &end, 0, name, TETHER_OK, "");
    tether__ws_call_end(w.ws[1], &end, 0, name, TETHER_OK, "");
    wait_on(&w, 0, 1, -1);
    tether__ws_call_end(w.ws[1], &end, 0, name, TETHER_EINVAL, "recv is NULL");
    beat(&w);
    assert_int_equal(verdict(&w, 0, why, sizeof why), TETHER_OK); /* a retry may come */
    beat_for(&w, 1);
    assert_int_equal(verdict(&w, 0, why, sizeof why), TETHER_EPEER);
    assert_non_null(strstr(why, "rank 1 failed its all_reduce with TETHER_EINVAL"));
    assert_non_null(strstr(why, "recv is NULL"));
    tether__ws_call_end(w.ws[1], &end, 0, name, TETHER_OK, "");
    tether__ws_call_end(w.ws[1], &end, 0, name, TETHER_OK, "");
    beat_for(&w, 1);
    assert_int_equal(verdict(&w, 0, why, sizeof why), TETHER_OK);
    /* a wait in another group in between, then the same end again: the record is the end's (its
     * group and no peer, at 8 and 16 in the first record's head), not the wait's */
    tether__ws_wait_begin(w.ws[1], 5, 7, "recv", 0, 3, NULL, 0);
    tether__ws_wait_end(w.ws[1], 0, 1);
    tether__ws_call_end(w.ws[1], &end, 0, name, TETHER_OK, "");
    uint8_t blob[TETHER__WS_BLOB_MAX];
    assert_true(tether__ws_pack(w.ws[1], w.pending[1], 0, blob, sizeof blob) > 0);
    assert_int_equal(tether__get_u32(blob + 4 + 8), 0);
    assert_int_equal((int32_t)tether__get_u32(blob + 4 + 16), -1);
    world_free(&w);
}

/* Bytes from a peer that are not a list of records are refused whole, with why. */
static void malformed_records_are_refused(void **state)
{
    (void)state;
    world w;
    char why[256];
    uint8_t blob[TETHER__WS_BLOB_MAX], bad[TETHER__WS_BLOB_MAX];
    world_new(&w, 2);
    wait_on(&w, 0, 1, 0);
    size_t len = tether__ws_pack(w.ws[0], w.pending[0], 0, blob, sizeof blob);
    assert_true(len > 44);
    struct {
        size_t at, len;
        uint8_t value;
        const char *why;
    } cases[] = {
        {0, 0, 0, "not a list of records"},       /* empty */
        {0, 3, 0, "not a list of records"},       /* shorter than the head */
        {0, SIZE_MAX, 0x00, "not a list"},        /* bad magic */
        {4, SIZE_MAX, 9, "a record of no rank"},  /* rank 9 of 2 */
        {6, SIZE_MAX, 7, "a record of no rank"},  /* state 7 */
        {34, SIZE_MAX, 3, "the wrong length"},    /* a bitmap of 3 bytes in a world of 2 */
        {SIZE_MAX, 0, 0, "bytes after the last"}, /* a byte more */
        {SIZE_MAX, 1, 0, "cut short"},            /* a byte less */
        {SIZE_MAX, 2, 0xff, "outside the world"}, /* a bit for rank 7 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = len;
        memcpy(bad, blob, len);
        if (cases[i].at != SIZE_MAX)
            bad[cases[i].at] = cases[i].value;
        if (cases[i].len == 0 && cases[i].at == 0)
            n = 0;
        else if (cases[i].len != SIZE_MAX && cases[i].at == 0)
            n = cases[i].len;
        else if (cases[i].at == SIZE_MAX && cases[i].len == 0)
            bad[n++] = 0;
        else if (cases[i].at == SIZE_MAX && cases[i].len == 1)
            n--;
        else if (cases[i].at == SIZE_MAX)
            bad[44 + strlen("recv")] = cases[i].value; /* the bitmap, after head and name */
        assert_int_equal(tether__ws_merge(w.ws[1], 0, bad, n, why, sizeof why), -1);
        if (!strstr(why, cases[i].why) || !strstr(why, "rank 0 sent a malformed heartbeat"))
            fail_msg("case %zu: \"%s\" lacks \"%s\"", i, why, cases[i].why);
    }
    assert_int_equal(tether__ws_merge(w.ws[1], 0, blob, len, why, sizeof why), 0);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_rank_cycle_is_named),
        cmocka_unit_test(one_call_stall_is_lost_data),
        cmocka_unit_test(busy_rank_and_moving_bytes_are_not),
        cmocka_unit_test(any_source_waits_on_the_group),
        cmocka_unit_test(failed_rank_fails_its_waiters),
        cmocka_unit_test(malformed_records_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
