/* core/progress.c - the only loop that waits: tagged messages to group ranks, and waiting for them with a
 * brief spin, then sleep in the transport's wait, under the TETHER_TIMEOUT deadline. */
#include <sched.h>
#include <time.h>

#include "coll.h"

/* Longest single sleep: bounds how late a thread notices a request another thread completed for it
 * (groups of one world may wait on one endpoint from several threads). */
#define SLEEP_SLICE_MS 10

static int64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static tether_tag tag_of(const tether_group *g, uint32_t step)
{
    return (tether_tag){.group = g->id, .seq = g->cur_seq, .step = step, .sig = g->cur_sig};
}

int tether__isend(tether_group *g, int peer, const void *buf, size_t bytes, uint32_t step,
                  tether_req **out)
{
    tether_world *w = g->world;
    return w->ops->isend(w->ep, g->world_ranks[peer], buf, bytes, tag_of(g, step), out);
}

int tether__irecv(tether_group *g, int peer, void *buf, size_t bytes, uint32_t step, tether_req **out)
{
    tether_world *w = g->world;
    return w->ops->irecv(w->ep, g->world_ranks[peer], buf, bytes, tag_of(g, step), out);
}

/* Test every pending request once. Returns <0 on error, else the number still pending; *progress
 * is set when at least one completed. */
static int test_all(tether_world *w, tether_req **reqs, int n, int *progress)
{
    int pending = 0;
    for (int i = 0; i < n; i++) {
        if (!reqs[i])
            continue;
        int done = 0;
        int rc = w->ops->test(w->ep, reqs[i], &done);
        if (rc < 0) {
            reqs[i] = NULL; /* released by test */
            return rc;
        }
        if (done) {
            reqs[i] = NULL;
            *progress = 1;
        } else {
            pending++;
        }
    }
    return pending;
}

int tether__waitall(tether_group *g, tether_req **reqs, int n)
{
    tether_world *w = g->world;
    const int64_t timeout_us = (int64_t)w->cfg.timeout_ms * 1000;
    int64_t last_progress = now_us();
    int64_t spin_until = last_progress + w->cfg.spin_us;
    for (;;) {
        int progress = 0;
        int pending = test_all(w, reqs, n, &progress);
        if (pending <= 0)
            return pending;
        int64_t now = now_us();
        if (progress) {
            last_progress = now;
            spin_until = now + w->cfg.spin_us;
            continue;
        }
        if (now - last_progress >= timeout_us)
            return tether__fail(TETHER_ETIMEDOUT,
                                "rank %d: no progress for %d s in %s (group %08x, call %u); a peer is "
                                "stopped, overloaded or never made this call (TETHER_TIMEOUT)",
                                g->rank, w->cfg.timeout_ms / 1000, g->cur_name, g->id, g->cur_seq);
        if (now < spin_until) {
            /* brief spin: a reply is often microseconds away; yield so ranks sharing a core run */
            sched_yield();
            continue;
        }
        int64_t left_ms = (timeout_us - (now - last_progress)) / 1000 + 1;
        TRY(w->ops->wait(w->ep, (int)(left_ms < SLEEP_SLICE_MS ? left_ms : SLEEP_SLICE_MS)));
    }
}

int tether__sendrecv(tether_group *g, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                     size_t rbytes, uint32_t step)
{
    tether_req *reqs[2] = {NULL, NULL};
    TRY(tether__irecv(g, from, rbuf, rbytes, step, &reqs[0]));
    TRY(tether__isend(g, to, sbuf, sbytes, step, &reqs[1]));
    return tether__waitall(g, reqs, 2);
}
