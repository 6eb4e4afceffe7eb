/* core/wait.c - the only loop that waits: tagged messages to group ranks, and waiting for them
 * with a brief, adaptive spin, then sleep in the transport's wait, under the TETHER_TIMEOUT
 * deadline (none when it is 0) and the peers' heartbeats, which also tell whether the ranks it
 * waits on can still answer (core/waitstate.h). */
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "batch.h"
#include "clock.h"
#include "params.h"
#include "spin.h"
#include "wait.h"

/* Longest single sleep: bounds how late a thread notices a request another thread completed for it
 * (groups of one world may wait on one endpoint from several threads). */
#define SLEEP_SLICE_MS 10
/* How often a sleeping wait reads the transport's moved() counter (a lock and a system call per
 * link): the timeout then runs from the last time data was seen moving, within this much. */
#define MOVED_SAMPLE_US 100000
/* Bytes per microsecond data must move at for a wait to spin on past its budget (streaming()):
 * 0.33 GB/s, 16 KiB per default period of 50 us. */
#define STREAM_MIN_RATE 330
/* Periods without that rate a streaming wait spins through before it sleeps: the gaps while a peer
 * reduces a segment before sending on. With 1 period, mid-size all-reduces still slept once an
 * iteration; with 2-8 they all but stopped sleeping (measured: docs/perf/notes.md, core/wait.c). */
#define STREAM_GAP_PERIODS 4

/* How long this thread's waits spin (yielding) before they sleep (core/spin.h). */
static _Thread_local tether__spin spin = TETHER__SPIN_INIT;

int tether__isend(tether_group *g, int peer, const void *buf, size_t bytes, uint32_t step,
                  tether__req **out)
{
    tether__world *w = g->world;
    return w->ops->isend(w->ep, g->world_ranks[peer], buf, bytes, tether__tag_of(g, step), out);
}

int tether__irecv(tether_group *g, int peer, void *buf, size_t bytes, uint32_t step,
                  tether__req **out)
{
    tether__world *w = g->world;
    return w->ops->irecv(w->ep, g->world_ranks[peer], buf, bytes, tether__tag_of(g, step), out);
}

/* Test every pending request once. Returns <0 on error, else the number still pending; *progress
 * is set when at least one completed. */
static int test_all(tether__world *w, tether__req **reqs, int n, int *progress)
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

/* The transport's moved() counter (constant for one without it: tether__transport_defaults). */
static uint64_t moved_of(tether__world *w)
{
    return w->ops->moved(w->ep);
}

/* The spin budget is spent: spin on while data streams? A long message arrives (or drains) over
 * many socket buffers; sleeping in the middle stalls the stream on both ends and costs a wake-up
 * per buffer (measured: docs/perf/notes.md, core/wait.c). So a wait spins on in periods of
 * TETHER_SPIN_US while the transport's moved() counter grows at STREAM_MIN_RATE or more, or did so
 * within STREAM_GAP_PERIODS periods. The first call takes the baseline and grants one period to
 * measure in; so a wait for a peer busy elsewhere spins one period longer than its budget, and a
 * stream that stops or slows to a trickle (a slow link, where a wake-up per buffer costs little)
 * ends the spin within the gap. */
typedef struct {
    uint64_t moved; /* moved() at t */
    int64_t t;      /* when it was read; 0 = not yet */
    int64_t flow;   /* the end of the last period that moved at STREAM_MIN_RATE */
} stream_probe;

static int streaming(tether__world *w, stream_probe *p, int64_t now)
{
    if (w->cfg.spin_us <= 0)
        return 0;
    int64_t period = w->cfg.spin_us, m = (int64_t)moved_of(w);
    if (!p->t) /* one period to measure in */
        p->flow = now - (STREAM_GAP_PERIODS - 1) * period;
    else if (m - (int64_t)p->moved >= STREAM_MIN_RATE * (now - p->t))
        p->flow = now;
    p->moved = (uint64_t)m;
    p->t = now;
    return now - p->flow < STREAM_GAP_PERIODS * period;
}

/* "all_reduce (group 0000002a, call 3)", "recv (tag 7)": the call g waits in, for messages. */
#define CALL_TEXT_MAX 96
static const char *call_text(const tether_group *g, char *buf)
{
    if (g->cur_tag >= 0)
        snprintf(buf, CALL_TEXT_MAX, "%s (tag %d)", g->cur_name, g->cur_tag);
    else
        snprintf(buf, CALL_TEXT_MAX, "%s (group %08x, call %u)", g->cur_name, g->id, g->cur_seq);
    return buf;
}
#define CALL_TEXT(g) call_text((g), (char[CALL_TEXT_MAX]){0})

/* Whether the call g waits in can still end: every peer still answers heartbeats (a stopped, hung
 * or unreachable one fails the call in TETHER__HEARTBEATS_MISSED periods, whatever TETHER_TIMEOUT
 * says; the transport looks at most a few times a period and reads the heartbeats waiting in the
 * sockets, whose records the verdict needs), and the ranks it waits on can still go on. */
static int can_go_on(tether_group *g)
{
    tether__world *w = g->world;
    if (!w->ops->alive)
        return TETHER_OK;
    char why[TETHER__ERRMSG_MAX];
    int rc = w->ops->alive(w->ep);
    if (rc < 0) { /* say which call was waiting, as the timeout does */
        snprintf(why, sizeof why, "%s", tether_last_error());
        tether__clear_error();
    } else {
        rc = tether__ws_verdict(w->ws, why, sizeof why); /* alive, but can any of them go on? */
    }
    if (rc < 0)
        return tether__fail(rc, "%s in %s: %s", TETHER__RANK_TEXT(g, g->rank), CALL_TEXT(g), why);
    return TETHER_OK;
}

/* The wait has made no progress for a heartbeat period: can it still end? */
static int peers_alive(tether_group *g, int64_t idle_us)
{
    return idle_us < (int64_t)g->world->cfg.heartbeat_ms * 1000 ? TETHER_OK : can_go_on(g);
}

/* From now on the heartbeats say this rank waits in g's current call, and on whom. */
static void wait_begin(tether_group *g, int *began)
{
    if (*began)
        return;
    tether__ws_wait_begin(g->world->ws, g->id, g->cur_seq, g->cur_name, g->cur_peer, g->cur_tag,
                          g->world_ranks, g->size);
    *began = 1;
}

/* The wait, from a first test that found requests pending (its progress flag in progress); *began
 * is set once it told the heartbeats it sleeps (tether__ws_wait_begin). */
static int wait_loop(tether_group *g, tether__tester test, void *arg, int progress, int *began)
{
    tether__world *w = g->world;
    /* 0: no deadline (TETHER_TIMEOUT=0): the wait lasts while the peers answer heartbeats */
    const int64_t timeout_us = (int64_t)w->cfg.call_timeout_ms * 1000;
    int64_t since = tether__now_us(); /* the last progress, or the start */
    int64_t spin_from = since;        /* start of the current spin period */
    stream_probe probe = {0, 0, 0};
    int64_t budget = -1;   /* this wait's spin budget, from its first spin; -1: not spun yet */
    int64_t asleep = 0;    /* when it first fell asleep */
    int64_t alive = since; /* since, or when data was last seen moving */
    /* moved_of() when last read, from the wait's first sleep on (not before: it costs a lock and
     * system calls that a short wait, a small message, must not pay), and when that was. Waiting
     * on from the deadline while anything had moved in the whole window, instead, let a stopped
     * peer go unnoticed for twice TETHER_TIMEOUT: its peers' own exchanges had moved early on. */
    uint64_t moved = 0;
    int64_t sampled = 0;
    /* how the wait since then went: only progress after an empty test says how long replies take
     * (a send that completes at once does not) */
    enum { FRESH, SPUN, SLEPT } waited = FRESH;
    /* each pass tests again, but the first: its test was the caller's */
    for (int pending = 1;; progress = 0, pending = test(arg, &progress)) {
        if (pending < 0)
            return pending;
        if (pending == 0 && waited == FRESH)
            return TETHER_OK;
        int64_t now = tether__now_us();
        if (progress) {
            if (waited != FRESH)
                tether__spin_adapt(&spin, w->cfg.spin_us, now - since,
                                   waited == SLEPT ? now - asleep : -1);
            if (pending == 0)
                return TETHER_OK;
            tether__ws_progress(w->ws);
            since = alive = spin_from = now;
            waited = FRESH;
            probe.t = 0;
            budget = -1;
            continue;
        }
        if (waited == SLEPT && now - sampled >= MOVED_SAMPLE_US) { /* slow, going? */
            uint64_t m = moved_of(w);
            if (m != moved)
                alive = now;
            moved = m;
            sampled = now;
        }
        if (timeout_us && now - alive >= timeout_us)
            return tether__fail(TETHER_ETIMEDOUT,
                                "%s: no progress for %d s in %s: no request finished and no "
                                "data moved; a peer is overloaded or never made this call (%s)",
                                TETHER__RANK_TEXT(g, g->rank), w->cfg.call_timeout_ms / 1000,
                                CALL_TEXT(g), TETHER__VAR(TIMEOUT));
        if (budget < 0)
            budget = tether__spin_budget(&spin, w->cfg.spin_us);
        if (now - spin_from < (probe.t ? w->cfg.spin_us : budget)) {
            /* a reply is often microseconds away; yield so ranks sharing a core run, but not in
             * the first w->hot_spin_us, where the reply of a peer on another core (through
             * shared memory: a fraction of a microsecond) would wait for the system call */
            if (waited == FRESH)
                waited = SPUN;
            if (now - spin_from < w->hot_spin_us)
                tether__cpu_relax();
            else
                sched_yield();
            continue;
        }
        if (waited == SPUN && streaming(w, &probe, now)) {
            spin_from = alive = now;
            continue;
        }
        if (waited != SLEPT) {
            moved = probe.t ? probe.moved : moved_of(w);
            sampled = asleep = now;
        }
        wait_begin(g, began);
        waited = SLEPT;
        TRY(peers_alive(g, now - since));
        int64_t left_ms = timeout_us ? (timeout_us - (now - alive)) / 1000 + 1 : SLEEP_SLICE_MS;
        TRY(w->ops->wait(w->ep, (int)(left_ms < SLEEP_SLICE_MS ? left_ms : SLEEP_SLICE_MS)));
    }
}

int tether__wait_until(tether_group *g, tether__tester test, void *arg)
{
    int began = 0, peer = g->cur_peer; /* a receive from any source may claim a peer meanwhile */
    int progress = 0, rc = test(arg, &progress);
    if (rc <= 0) /* done, or failed, at the first look: no clock read, no wait (a small call's
                    sends into a pair's ring, a broadcast root's above all) */
        return rc;
    rc = wait_loop(g, test, arg, progress, &began);
    if (began)
        tether__ws_wait_end(g->world->ws, peer, 1);
    return rc;
}

int tether__wait_slice(tether_group *g, int ms, int *began)
{
    tether__world *w = g->world;
    wait_begin(g, began);
    TRY(w->ops->wait(w->ep, ms));
    return can_go_on(g); /* each slice: the caller's slices may never add up to a period */
}

typedef struct {
    tether__world *w;
    tether__req **reqs;
    int n;
} request_list;

static int test_list(void *arg, int *progress)
{
    request_list *l = arg;
    return test_all(l->w, l->reqs, l->n, progress);
}

int tether__testall(tether_group *g, tether__req **reqs, int n, int *progress)
{
    return test_all(g->world, reqs, n, progress);
}

int tether__waitall(tether_group *g, tether__req **reqs, int n)
{
    request_list l = {g->world, reqs, n};
    return tether__wait_until(g, test_list, &l);
}

int tether__sendrecv(tether_group *g, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                     size_t rbytes, uint32_t step)
{
    tether__req *reqs[2] = {NULL, NULL};
    tether__batch b;
    tether__batch_init(&b, g);
    /* the send first: the receive's request is then made while the message is on its way, not
     * between the peer's last message and this one (a small exchange's critical path) */
    TRY(tether__batch_send(&b, to, sbuf, sbytes, step, &reqs[1]));
    TRY(tether__batch_recv(&b, from, rbuf, rbytes, step, &reqs[0]));
    TRY(tether__batch_post(&b));
    return tether__waitall(g, reqs, 2);
}
