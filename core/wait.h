/* core/wait.h - messages between the ranks of a group and the waits for them (core/wait.c): what
 * the algorithms of core/algo and the point-to-point calls (core/p2p.c) send and receive with. */
#ifndef TETHER_CORE_WAIT_H
#define TETHER_CORE_WAIT_H

#include <stddef.h>
#include <stdint.h>

#include "group.h"

/* Messages between group ranks, tagged with the running collective and step. Errors are sticky
 * on the world and already recorded. */
int tether__isend(tether_group *g, int peer, const void *buf, size_t bytes, uint32_t step,
                  tether__req **out);
int tether__irecv(tether_group *g, int peer, void *buf, size_t bytes, uint32_t step,
                  tether__req **out);

/* Wait for n requests (NULL entries are skipped and set to NULL when done). Spins briefly and
 * adaptively, then sleeps in the transport's wait; no progress for TETHER_TIMEOUT -> ETIMEDOUT. */
int tether__waitall(tether_group *g, tether__req **reqs, int n);

/* Test n requests once without waiting (NULL entries skipped, set to NULL when done): how many are
 * still pending, or < 0 (the error, recorded); *progress set when one completed. */
int tether__testall(tether_group *g, tether__req **reqs, int n, int *progress);

/* The same wait over what test says: called once a round, it makes what progress it can without
 * blocking and returns how much is still pending (0: done; < 0: the error, recorded), setting
 * *progress when something completed or moved on (which resets the TETHER_TIMEOUT clock). For a
 * wait whose requests are not all posted yet (an any-source receive, core/p2p.c). */
typedef int (*tether__tester)(void *arg, int *progress);
int tether__wait_until(tether_group *g, tether__tester test, void *arg);
/* One sleep of a wait that polls in slices (tether_waitsome, whose caller decides when to stop):
 * up to ms in g's current call (g->cur_*), then whether it can still end, as tether__wait_until
 * asks after a period without progress: the peers answer heartbeats, and the ranks it waits on
 * can go on (TETHER_EDEADLOCK, TETHER_EPEER: core/waitstate.h). The heartbeats say this rank waits
 * from its first slice (*began set) until the caller's tether__ws_wait_end, with the g->cur_peer
 * of that slice. */
int tether__wait_slice(tether_group *g, int ms, int *began);

/* Send to one peer and receive from another (or the same) at once, then wait for both. */
int tether__sendrecv(tether_group *g, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                     size_t rbytes, uint32_t step);

#endif
