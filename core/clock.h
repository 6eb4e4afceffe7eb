/* core/clock.h - the one clock that every wait, heartbeat, timeout and resend reads:
 * CLOCK_MONOTONIC, so a change of the wall clock never ends or stretches a wait. */
#ifndef TETHER_CORE_CLOCK_H
#define TETHER_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Microseconds of clock id. */
static inline int64_t tether__clock_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline int64_t tether__now_us(void)
{
    return tether__clock_us(CLOCK_MONOTONIC);
}

static inline int64_t tether__now_ms(void)
{
    return tether__now_us() / 1000;
}

/* The same clock read cheaply, to the system's tick (1-4 ms on Linux): for a look that is due
 * every so often on a path that runs millions of times a second, where a precise read costs
 * 20-30 ns, as much as the rest of a small broadcast's root (measured: docs/perf/notes.md,
 * core/clock.h). Never for a deadline. */
static inline int64_t tether__coarse_us(void)
{
#if defined(CLOCK_MONOTONIC_COARSE)
    return tether__clock_us(CLOCK_MONOTONIC_COARSE);
#elif defined(CLOCK_MONOTONIC_RAW_APPROX) /* macOS */
    return tether__clock_us(CLOCK_MONOTONIC_RAW_APPROX);
#else
    return tether__now_us();
#endif
}

#endif
