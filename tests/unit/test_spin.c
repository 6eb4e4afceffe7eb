/* tests/unit/test_spin.c - the adaptive spin budget (core/spin.c), over simulated waits: it grows
 * back after peers computing also where a wake-up costs more than twice the cap, covers replies
 * slower than the cap there, stays near the floor while peers compute, and follows quick wake-ups
 * as before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <unistd.h>

#include <cmocka.h>

#include "core/spin.h"

#define CAP 50 /* TETHER_SPIN_US's default */

/* One wait whose reply comes reply_us after it starts, on a machine where waking from a sleep
 * takes wake_us: it spins its budget and catches the reply, or sleeps and wakes wake_us after the
 * reply. Returns 1 when it slept; *spun adds the microseconds it spun. */
static int one_wait(tether__spin *s, int64_t reply_us, int64_t wake_us, int64_t *spun)
{
    int64_t budget = tether__spin_budget(s, CAP);
    if (reply_us <= budget) {
        *spun += reply_us;
        tether__spin_adapt(s, CAP, reply_us, -1);
        return 0;
    }
    *spun += budget;
    tether__spin_adapt(s, CAP, reply_us + wake_us, reply_us + wake_us - budget);
    return 1;
}

/* Peers computing 20 ms per call bring the budget down to the floor. */
static void computing(tether__spin *s, int waits, int64_t *spun)
{
    for (int i = 0; i < waits; i++)
        one_wait(s, 20000, 30, spun);
}

/* After peers computing brought the budget to the floor, waits whose reply comes in reply_us, or
 * every tenth in slow_us, on a machine where a wake-up takes wake_us: how many of the waits after
 * the first settle slept. */
static int slept_after(tether__spin *s, int waits, int settle, int64_t reply_us, int64_t slow_us,
                       int64_t wake_us)
{
    int64_t spun = 0;
    int slept = 0;
    computing(s, 40, &spun);
    assert_true(s->budget <= CAP / TETHER__SPIN_FLOOR_DIV);
    for (int i = 0; i < waits; i++)
        if (one_wait(s, i % 10 == 9 ? slow_us : reply_us, wake_us, &spun) && i >= settle)
            slept++;
    return slept;
}

/* Replies in 8 us again, but every wake-up takes 500 us (more than twice the cap): without the
 * probe every wait slept for good, each costing the wake-up; with it the budget is back at the
 * cap within two probes and no wait sleeps after that. */
static void test_slow_wake_recovers(void **state)
{
    (void)state;
    tether__spin s = TETHER__SPIN_INIT;
    assert_int_equal(slept_after(&s, 200, 2 * TETHER__SPIN_PROBE_EVERY, 8, 8, 500), 0);
    assert_true(s.budget >= CAP);
}

/* Four ranks on two cores: replies mostly in 30 us, one in ten in 150 us (over the cap), and a
 * wake-up of 800 us. Spinning up to the wake-up's cost catches them all after a start; a cap of
 * 50 us slept on every slow reply and then on the quick ones behind it. */
static void test_slow_wake_long_replies(void **state)
{
    (void)state;
    tether__spin s = TETHER__SPIN_INIT;
    int64_t spun = 0;
    assert_int_equal(slept_after(&s, 400, 100, 30, 150, 800), 0);
    assert_true(s.budget <= TETHER__SPIN_WAKE_MAX_US);
    /* peers computing again: back to the floor of TETHER_SPIN_US within a few waits */
    computing(&s, 8, &spun);
    assert_true(s.budget <= CAP / TETHER__SPIN_FLOOR_DIV);
}

/* While peers compute, the budget stays at the floor: the probes add at most one cap of spinning
 * per TETHER__SPIN_PROBE_EVERY waits. */
static void test_computing_stays_low(void **state)
{
    (void)state;
    tether__spin s = TETHER__SPIN_INIT;
    int64_t spun = 0;
    computing(&s, 20, &spun); /* settle at the floor */
    spun = 0;
    computing(&s, 800, &spun);
    assert_true(s.budget <= CAP / TETHER__SPIN_FLOOR_DIV);
    assert_true(spun <=
                800 * (CAP / TETHER__SPIN_FLOOR_DIV) + (800 / TETHER__SPIN_PROBE_EVERY) * CAP);
}

/* Where a wake-up is quick (within twice the cap) the budget grows back without probes too, and
 * a reply caught while spinning keeps it at the cap. */
static void test_quick_wake_grows(void **state)
{
    (void)state;
    tether__spin s = TETHER__SPIN_INIT;
    int64_t spun = 0;
    computing(&s, 40, &spun);
    tether__spin_adapt(&s, CAP, 40, 37); /* slept, woke 40 us after the start: soon enough */
    assert_int_equal(s.budget, 2 * (CAP / TETHER__SPIN_FLOOR_DIV) + 1);
    for (int i = 0; i < 10; i++)
        one_wait(&s, 8, 30, &spun);
    assert_int_equal(s.budget, CAP);
}

/* A cap of 0 never spins, probes included; a lower cap clamps a budget set under a higher one. */
static void test_caps(void **state)
{
    (void)state;
    tether__spin s = TETHER__SPIN_INIT;
    for (int i = 0; i < 3 * TETHER__SPIN_PROBE_EVERY; i++)
        assert_int_equal(tether__spin_budget(&s, 0), 0);
    s.budget = CAP;
    assert_int_equal(tether__spin_budget(&s, 10), 10);
}

/* The hot start: kept while the host's ranks fit its CPUs, dropped once they outnumber them. */
static void test_hot_start(void **state)
{
    (void)state;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    assert_true(cpus > 0);
    assert_int_equal(tether__spin_hot_us(1), TETHER__SPIN_HOT_US);
    assert_int_equal(tether__spin_hot_us((int)cpus), TETHER__SPIN_HOT_US);
    assert_int_equal(tether__spin_hot_us((int)cpus + 1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slow_wake_recovers),
        cmocka_unit_test(test_slow_wake_long_replies),
        cmocka_unit_test(test_computing_stays_low),
        cmocka_unit_test(test_quick_wake_grows),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_hot_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
