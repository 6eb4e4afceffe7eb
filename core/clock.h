/* core/clock.h - the one clock that every wait, heartbeat, timeout and resend reads:
 * CLOCK_MONOTONIC, so a change of the wall clock never ends or stretches a wait. */
#ifndef TETHER_CORE_CLOCK_H
#define TETHER_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t tether__now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline int64_t tether__now_ms(void)
{
    return tether__now_us() / 1000;
}

#endif
