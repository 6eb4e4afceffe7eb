/* backends/net/loop.h - the event loop every backend's progress thread is: one thread asleep in
 * poll() on what a handler names, calling the handler back with what poll() said.
 *
 * A message between distant ranks of a ring passes through ranks that may be computing outside
 * tether, and a failure must reach every rank even when nobody calls tether; so an endpoint may
 * run one thread that sleeps in poll() and moves whatever is ready. The loop owns that thread, a
 * wake pipe (always first in the poll set) and a condition variable that the program's threads
 * sleep on while they wait for a state of the endpoint (closing); the backend owns everything else
 * and tells the loop what to watch through a handler, as libuv's watchers or gloo's Loop handlers
 * do. Callbacks run under the endpoint's mutex, which the loop releases only around poll(); they
 * never call the loop back except to signal or kick it. The loop knows nothing of links, frames or
 * requests, and it is portable (poll(), pipes and pthreads: it runs on macOS too).
 *
 * Waiters: the endpoint counts events (request parts finished, notices, breaks) in a uint64_t the
 * loop reads under the mutex; tether__loop_signal wakes the waiters when it moved, and a thread's
 * tether__loop_seen remembers the count its last test() saw, so a completion between that test
 * and the next wait is never slept through. */
#ifndef TETHER_NET_LOOP_H
#define TETHER_NET_LOOP_H

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

typedef struct tether__loop tether__loop;

typedef struct tether__loop_handler {
    void *arg;
    int nfds; /* the most descriptors fds() names */
    /* Before each sleep: do what is due without waiting (report a break to the peers, arm a
     * completion channel). 1 when something moved and the loop should look again before
     * sleeping; the loop signals the waiters either way. */
    int (*due)(void *arg);
    /* The descriptors to watch now, at most nfds; -1 as fd leaves a slot out. Returns the count. */
    int (*fds)(void *arg, struct pollfd *pfd);
    /* poll() reported n of them ready (n > 0 descriptors, as fds() filled them). */
    void (*ready)(void *arg, const struct pollfd *pfd, int n);
    /* poll() itself failed with err (not EINTR): the endpoint breaks. */
    void (*failed)(void *arg, int err);
    /* NULL, or 1 while the program's own threads move the bytes (they are inside calls, waiting in
     * poll() themselves): the thread then stands by, watching only its wake pipe, and asks again
     * within TETHER__LOOP_STANDBY_MS (growing to TETHER__LOOP_STANDBY_MAX_MS). Two threads woken by
     * every packet, one of them handing the news to the other through the condition variable, made
     * a ring's neighbour messages cost two wake-ups in a row where a mesh's cost one. */
    int (*standby)(void *arg);
} tether__loop_handler;

/* How often a standing-by thread looks whether the program has left: first after
 * TETHER__LOOP_STANDBY_MS, then twice as long each time the program is still inside, up to
 * TETHER__LOOP_STANDBY_MAX_MS. A forwarded frame or a failure's news waits at most that long for
 * the thread once the program computes outside tether (while it waits inside, its own wait moves
 * them); a look every millisecond in each rank was a context switch in three of a ring's. */
#define TETHER__LOOP_STANDBY_MS 1
#define TETHER__LOOP_STANDBY_MAX_MS 8

/* Start the thread over h, with mu the endpoint's mutex and events its count. *out is set under
 * mu before the thread starts, so callbacks may read it. who names the backend in messages. Called
 * without mu held. */
int tether__loop_start(const tether__loop_handler *h, pthread_mutex_t *mu, const uint64_t *events,
                       const char *who, tether__loop **out);

/* Stop and free the loop *slot holds: caller holds mu, which is released while the thread is
 * joined; *slot is NULL when this returns (mu held again). */
void tether__loop_stop(tether__loop **slot);

/* Wake the thread (new bytes to watch for room, or stop). Any thread. */
void tether__loop_kick(tether__loop *lp);

/* Caller holds mu: wake the waiters when the events count moved since the last signal. */
void tether__loop_signal(tether__loop *lp);

/* Caller holds mu: remember the events count as this thread saw it (its test() did). */
void tether__loop_seen(const tether__loop *lp);

/* Caller holds mu: 1 when the events count moved since this thread's last test() saw it (then a
 * wait must not sleep: a request of this thread's may have finished). */
int tether__loop_missed(const tether__loop *lp);

/* Caller holds mu: sleep until the next signal or until (tether__loop_deadline's clock); 1 when
 * the time ran out. For waits on a condition of the endpoint's own, checked between sleeps. */
int tether__loop_sleep(tether__loop *lp, const struct timespec *until);
struct timespec tether__loop_deadline(int64_t ms);
/* A condition variable whose timed waits take tether__loop_deadline's times (its clock is the
 * monotonic one where the system lets it be chosen). TETHER_ENOMEM when it cannot be made. */
int tether__loop_cond_init(pthread_cond_t *cv);

#endif
