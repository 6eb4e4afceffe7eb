/* core/spin.h - how long a wait spins before it sleeps: the adaptive budget of core/wait.c.
 *
 * A sleep costs a wake-up when the reply comes, so spinning pays only when replies come within
 * about that long; how long they take depends on the peers, so the budget follows what the last
 * waits saw (the ski-rental rule, made adaptive):
 * - progress while spinning, or soon after falling asleep (within twice the cap, which covers a
 *   wake-up): spinning longer would have caught it, so the budget doubles, and covers at least
 *   twice the wait that caught it, up to the cap;
 * - progress only long after falling asleep (peers computing, or not scheduled): the spin was
 *   wasted, so the budget halves, down to the cap / TETHER__SPIN_FLOOR_DIV.
 * The cap is TETHER_SPIN_US (50 us), enough where a wake-up takes tens of microseconds. Some VMs
 * take far longer (the host deschedules idle virtual CPUs: a blocking 8-byte all-reduce of 2 took
 * 700-900 us on one, against 7 us spinning). There every wait with a short budget ended long after
 * falling asleep, which reads as peers computing: the budget stayed at the floor while replies
 * came in microseconds, and small all-reduces took 100-1000 us instead of 7-40 (measured:
 * docs/perf/notes.md, core/spin.c). Two rules fix it:
 * - a probe: every TETHER__SPIN_PROBE_EVERY-th wait of a budget under the cap spins the whole cap,
 *   so a reply that comes quickly is seen whatever the budget;
 * - the cap follows the wake-up: a thread keeps the least time lately from falling asleep to
 *   progress (an upper bound of a wake-up's cost); while its spins catch replies, the cap rises
 *   to that, at most TETHER__SPIN_WAKE_MAX_US, as spinning up to the cost of sleeping is the
 *   ski-rental rule. A wait that spun its budget and still waited long (peers computing) ends it.
 * Per thread in wait.c: groups used from different threads wait for different peers. */
#ifndef TETHER_CORE_SPIN_H
#define TETHER_CORE_SPIN_H

#include <stdint.h>

#define TETHER__SPIN_FLOOR_DIV 16
#define TETHER__SPIN_PROBE_EVERY 8
#define TETHER__SPIN_WAKE_MAX_US 1000
/* The first microseconds of a spin poll without yielding (core/wait.c): a peer on another core
 * answers through a shared ring in under a microsecond, and a sched_yield() in a VM costs about
 * one (8-byte all-reduce at N = 2: 2.6 us with a yield per poll, 1.6 with 2 us hot, 1.4 with 5).
 * Not where this host has more ranks than CPUs: there the peer a wait needs is often queued on
 * the waiter's own CPU, and every hot microsecond delays it (8-byte all-reduce on 2 CPUs: N = 3
 * 5.9-6.3 us a call with 3 us hot, 4.6-4.7 without; N = 4 6.5-10.1 against 4.7-6.4; measured:
 * docs/perf/notes.md, core/spin.h). */
#define TETHER__SPIN_HOT_US 3

/* The hot spin of a rank with ranks_here ranks (itself included) on its host: TETHER__SPIN_HOT_US,
 * or 0 where they outnumber the host's online CPUs. */
int tether__spin_hot_us(int ranks_here);

typedef struct tether__spin {
    int64_t budget;       /* microseconds; -1 until first use */
    int64_t wake_us;      /* least time from falling asleep to progress lately; 0: none seen */
    unsigned since_probe; /* waits since the last probe */
    int replies_fast;     /* the last spin that could tell caught its reply */
} tether__spin;

#define TETHER__SPIN_INIT                                                                          \
    {                                                                                              \
        -1, 0, 0, 0                                                                                \
    }

/* A hint to the core that this thread spins (lets a sibling hyperthread run, saves power). */
static inline void tether__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* The budget of a wait about to spin, for TETHER_SPIN_US = cap_us: the current one, or the whole
 * cap for a probe. */
int64_t tether__spin_budget(tether__spin *s, int64_t cap_us);

/* A wait ended in progress waited_us after it began; asleep_us: how long before that it fell
 * asleep, or -1 when it did not. */
void tether__spin_adapt(tether__spin *s, int64_t cap_us, int64_t waited_us, int64_t asleep_us);

#endif
