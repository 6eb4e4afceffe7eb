/* core/spin.c - the adaptive spin budget (core/spin.h says the rules and why). */
#include "spin.h"

#include "host.h"

int tether__spin_hot_us(int ranks_here)
{
    return tether__host_crowded(ranks_here) ? 0 : TETHER__SPIN_HOT_US;
}

/* The cap in force: TETHER_SPIN_US, raised to the wake-up's cost while spins catch replies. */
static int64_t cap_of(const tether__spin *s, int64_t cap_us)
{
    int64_t wake = s->wake_us < TETHER__SPIN_WAKE_MAX_US ? s->wake_us : TETHER__SPIN_WAKE_MAX_US;
    return cap_us > 0 && s->replies_fast && wake > cap_us ? wake : cap_us;
}

/* The budget without probes, within the cap in force. */
static int64_t current(tether__spin *s, int64_t cap)
{
    if (s->budget < 0 || s->budget > cap)
        s->budget = cap;
    return s->budget;
}

int64_t tether__spin_budget(tether__spin *s, int64_t cap_us)
{
    int64_t cap = cap_of(s, cap_us), b = current(s, cap);
    if (b < cap && ++s->since_probe >= TETHER__SPIN_PROBE_EVERY) {
        s->since_probe = 0;
        return cap;
    }
    return b;
}

void tether__spin_adapt(tether__spin *s, int64_t cap_us, int64_t waited_us, int64_t asleep_us)
{
    int64_t cap, floor, b;
    if (asleep_us < 0) {
        s->replies_fast = 1;
    } else {
        int64_t up = s->wake_us + s->wake_us / 8 + 1; /* forget slowly: the machine changes */
        s->wake_us = !s->wake_us || asleep_us < up ? asleep_us : up;
    }
    cap = cap_of(s, cap_us);
    b = current(s, cap);
    if (asleep_us < 0 || waited_us <= 2 * cap) {
        b = b * 2 + 1; /* + 1: a budget of 0 grows too */
        if (asleep_us < 0 && b < 2 * waited_us)
            b = 2 * waited_us; /* a probe's catch: cover it at once, not a doubling at a time */
    } else {
        b /= 2;
        s->replies_fast = 0; /* spun for nothing: peers are busy, not the wake-up slow */
        cap = cap_of(s, cap_us);
    }
    floor = cap / TETHER__SPIN_FLOOR_DIV;
    s->budget = b > cap ? cap : b < floor ? floor : b;
}
