/* launcher/supervise.c - watch a job's ranks until all are gone: one poll() over their output,
 * their stdin, the launcher's stdin and its signals; report the first failure in time (ranks found
 * dead together are taken in the order they ended, exit_order.c) and stop the rest (SIGTERM, then
 * SIGKILL after a grace period); ranks that then fail on their own are named as following it. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "core/clock.h"
#include "exit_order.h"
#include "launch_say.h"
#include "rank_output.h"
#include "signals.h"
#include "spawn.h"
#include "stdin_bcast.h"
#include "supervise.h"

#define POLL_MAX_MS 1000     /* re-check children even if a SIGCHLD got lost */
#define POLL_STOPPING_MS 100 /* while a stopped rank may empty silently (no wake-up comes) */
#define DRAIN_MS 1000        /* for what is left once every rank is reaped and stopped */

/* What each pollfd is: the signal pipe, our stdin, or rank r's out/err/in. */
enum { WHO_SIGNALS = -1, WHO_STDIN = -2 };
enum { KIND_OUT, KIND_ERR, KIND_IN, NKINDS };

typedef struct sup {
    tether__rank_proc *ranks;
    int n;
    tether__bcast *in;
    int sigfd;
    int status; /* the job's exit status once decided; -1 while all is well */
    int first;  /* the rank whose failure decided it; -1 before, or the launcher's */
    tether__exit_order order;
    int stopping;          /* every rank has been told to stop */
    long long drain_until; /* 0 until every rank is reaped and stopped */
    struct pollfd *pfds;
    int *who; /* per pollfd: WHO_* or rank * NKINDS + kind */
} sup;

static int exit_code(int wstatus)
{
    return WIFSIGNALED(wstatus) ? 128 + WTERMSIG(wstatus) : WEXITSTATUS(wstatus);
}

static int count_running(const sup *s)
{
    int running = 0;
    for (int i = 0; i < s->n; i++)
        running += !s->ranks[i].waited;
    return running;
}

/* SIGTERM starts the grace period (the spawner may lengthen it); SIGKILL ends it. A rank with
 * nothing left to signal is done. */
static void stop_rank(tether__rank_proc *p, int sig)
{
    if (p->stop == TETHER__STOP_KILL || (sig == SIGTERM && p->stop == TETHER__STOP_TERM))
        return;
    if (sig == SIGTERM) {
        p->stop = TETHER__STOP_TERM;
        p->kill_at_ms = tether__now_ms() + TETHER__LAUNCH_GRACE_MS;
        if (p->spawner->signal(p, SIGTERM) != 0)
            p->stop = TETHER__STOP_KILL;
    } else {
        p->spawner->signal(p, SIGKILL);
        p->stop = TETHER__STOP_KILL;
    }
}

static void stop_all(sup *s, int sig)
{
    s->stopping = 1;
    for (int i = 0; i < s->n; i++)
        stop_rank(&s->ranks[i], sig);
}

static void report_failure(const sup *s, const tether__rank_proc *p)
{
    char others[64] = "", how[160];
    int running = count_running(s);
    if (running > 0)
        snprintf(others, sizeof others, "; stopping the other %d rank%s", running,
                 running == 1 ? "" : "s");
    if (WIFSIGNALED(p->wstatus))
        snprintf(how, sizeof how, "was killed by signal %d (%s)", WTERMSIG(p->wstatus),
                 strsignal(WTERMSIG(p->wstatus)));
    else
        snprintf(how, sizeof how, "exited with status %d%s", WEXITSTATUS(p->wstatus),
                 p->host && WEXITSTATUS(p->wstatus) == 255
                     ? " (ssh's status: the host could not be reached or the connection was "
                       "lost; ssh's message is above)"
                     : "");
    if (s->first != p->rank) /* failed on its own after the first: most likely because of it */
        tether__launch_say("rank %d%s %s, after rank %d failed", p->rank, p->where, how, s->first);
    else
        tether__launch_say("rank %d%s %s%s", p->rank, p->where, how, others);
}

/* Rank p's main process has exited. Its last output goes out before anything we say about it;
 * the first failure decides the job's status and stops the others; processes it left behind in
 * its group are stopped like a rank. */
static void on_rank_exit(sup *s, tether__rank_proc *p, int wstatus)
{
    p->reaped = 1;
    p->wstatus = wstatus;
    tether__out_pump(&p->out, 1);
    tether__out_pump(&p->err, 1);
    tether__bcast_close(s->in, p->rank);
    if (exit_code(wstatus) != 0 && s->status < 0) {
        s->status = exit_code(wstatus);
        s->first = p->rank;
        report_failure(s, p);
        stop_all(s, SIGTERM);
    } else if (exit_code(wstatus) != 0 && p->ended_alone && s->first >= 0) {
        report_failure(s, p); /* a follow-on failure, not one we caused by stopping it */
    }
    if (p->stop == TETHER__STOP_NONE)
        stop_rank(p, SIGTERM);
}

static tether__rank_proc *rank_of_pid(sup *s, pid_t pid)
{
    for (int i = 0; i < s->n; i++)
        if (s->ranks[i].pid == pid && !s->ranks[i].waited)
            return &s->ranks[i];
    return NULL;
}

/* A rank that exited with a failing status may only be following another's failure, and the
 * kernel's order cannot always tell: a rank killed mid-collective has its memory torn down before
 * its descriptors close, and peers that read its memory (process_vm_readv: ESRCH) fail and exit
 * first. So before such a rank decides the job's status, it waits up to HOLD_MS for the ranks
 * still running: one killed by a signal in that time failed first. */
#define HOLD_MS 300

static int killed(const tether__rank_proc *p)
{
    return WIFSIGNALED(p->wstatus) && p->ended_alone; /* not by us */
}

/* Whether p goes before q: before the job's status is decided, ranks killed by a signal first;
 * then the order they ended in (unknown last). */
static int before(const sup *s, const tether__rank_proc *p, const tether__rank_proc *q)
{
    if (s->status < 0 && killed(p) != killed(q))
        return killed(p);
    unsigned long long op = p->exit_seq ? p->exit_seq : ~0ull;
    unsigned long long oq = q->exit_seq ? q->exit_seq : ~0ull;
    return op < oq;
}

/* p, a failure with a status, would decide the job: hold it while another rank may yet turn out
 * to have been killed first. */
static int hold(const sup *s, const tether__rank_proc *p)
{
    if (s->status >= 0 || exit_code(p->wstatus) == 0 || killed(p))
        return 0;
    if (tether__now_ms() - p->ended_ms >= HOLD_MS)
        return 0;
    for (int i = 0; i < s->n; i++)
        if (!s->ranks[i].waited)
            return 1;
    return 0;
}

/* Reap every child that has exited: ranks, and (as subreaper, see launch.c) the orphans of their
 * trees, which would otherwise stay zombies in the rank's process group until init reaps them.
 * The ranks go through on_rank_exit in the order they ended, a rank killed by a signal first (see
 * hold): the first failure in time decides the job's status and is named first. */
static void reap(sup *s)
{
    int wstatus;
    pid_t pid;
    while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
        tether__rank_proc *p = rank_of_pid(s, pid);
        if (p) {
            p->waited = 1;
            p->ended_alone = p->stop == TETHER__STOP_NONE;
            p->wstatus = wstatus;
            if (!p->exit_seq)
                p->ended_ms = tether__now_ms();
        }
    }
    if (pid < 0 && errno == ECHILD) {
        for (int i = 0; i < s->n; i++) {
            if (!s->ranks[i].waited) { /* someone else reaped it: should not happen */
                tether__launch_say("rank %d: its process %d vanished", i, (int)s->ranks[i].pid);
                s->ranks[i].waited = 1;
                s->ranks[i].ended_alone = 1;
                s->ranks[i].wstatus = 1 << 8; /* unknown fate: count it as status 1 */
            }
        }
    }
    tether__exit_order_note(&s->order, s->ranks);
    for (;;) {
        tether__rank_proc *next = NULL;
        for (int i = 0; i < s->n; i++) {
            tether__rank_proc *p = &s->ranks[i];
            if (p->waited && !p->reaped && (!next || before(s, p, next)))
                next = p;
        }
        if (!next || hold(s, next))
            return;
        on_rank_exit(s, next, next->wstatus);
    }
}

static void on_signals(sup *s)
{
    int sig;
    while ((sig = tether__signals_next()) != 0) {
        if (sig == SIGCHLD)
            continue; /* reap() runs after every wake-up */
        if (s->status < 0)
            s->status = 128 + sig;
        if (!s->stopping) {
            tether__launch_say("got signal %d (%s); stopping %d rank%s", sig, strsignal(sig),
                               count_running(s), count_running(s) == 1 ? "" : "s");
            stop_all(s, SIGTERM);
        } else {
            tether__launch_say("got signal %d (%s) again; killing every rank now", sig,
                               strsignal(sig));
            stop_all(s, SIGKILL);
        }
    }
}

/* SIGKILL for ranks whose grace period is over; ranks that emptied on their own are done. */
static void escalate(sup *s)
{
    long long now = tether__now_ms();
    for (int i = 0; i < s->n; i++) {
        tether__rank_proc *p = &s->ranks[i];
        if (p->stop != TETHER__STOP_TERM)
            continue;
        if (p->spawner->signal(p, 0) != 0)
            p->stop = TETHER__STOP_KILL;
        else if (now >= p->kill_at_ms) {
            tether__launch_say("rank %d%s did not stop within %d s of SIGTERM; sending SIGKILL",
                               p->rank, p->where, TETHER__LAUNCH_GRACE_MS / 1000);
            stop_rank(p, SIGKILL);
        }
    }
}

/* Done when every rank is reaped and out of its grace period, and nothing of it is left: no
 * process in its group (orphans we reap as subreaper, zombies included), no open output pipe.
 * What remains after DRAIN_MS more (a process in uninterruptible sleep, a pipe held by something
 * that left the group) is not waited for. */
static int finished(sup *s)
{
    int busy = 0;
    for (int i = 0; i < s->n; i++) {
        tether__rank_proc *p = &s->ranks[i];
        if (!p->reaped || p->stop == TETHER__STOP_TERM)
            return 0;
        busy += p->out.fd >= 0 || p->err.fd >= 0 || p->spawner->signal(p, 0) == 0;
    }
    if (!busy)
        return 1;
    if (s->drain_until == 0)
        s->drain_until = tether__now_ms() + DRAIN_MS;
    return tether__now_ms() >= s->drain_until;
}

static int poll_timeout(const sup *s)
{
    long long now = tether__now_ms(), t = POLL_MAX_MS;
    for (int i = 0; i < s->n; i++) {
        const tether__rank_proc *p = &s->ranks[i];
        if (p->stop == TETHER__STOP_TERM) {
            t = t < POLL_STOPPING_MS ? t : POLL_STOPPING_MS;
            t = t < p->kill_at_ms - now ? t : p->kill_at_ms - now;
        }
    }
    if (s->drain_until)
        t = t < s->drain_until - now ? t : s->drain_until - now;
    for (int i = 0; i < s->n; i++) /* a rank held back for one that ended before it */
        if (s->ranks[i].waited && !s->ranks[i].reaped)
            t = t < POLL_STOPPING_MS ? t : POLL_STOPPING_MS;
    for (int i = 0; i < s->n; i++) { /* unfinished lines (prompts) due to be passed on */
        long long due[2] = {tether__out_due_ms(&s->ranks[i].out),
                            tether__out_due_ms(&s->ranks[i].err)};
        for (int k = 0; k < 2; k++)
            if (due[k] >= 0)
                t = t < due[k] - now ? t : due[k] - now;
    }
    return t > 0 ? (int)t : 0;
}

/* Pass on the unfinished lines that have been quiet long enough. */
static void flush_quiet_lines(sup *s)
{
    long long now = tether__now_ms();
    for (int i = 0; i < s->n; i++) {
        tether__out_tick(&s->ranks[i].out, now);
        tether__out_tick(&s->ranks[i].err, now);
    }
}

static void add_pollfd(sup *s, int *k, int fd, short events, int who)
{
    s->pfds[*k] = (struct pollfd){.fd = fd, .events = events};
    s->who[(*k)++] = who;
}

static int build_pollfds(sup *s)
{
    int k = 0;
    add_pollfd(s, &k, s->sigfd, POLLIN, WHO_SIGNALS);
    if (tether__bcast_wants_read(s->in))
        add_pollfd(s, &k, s->in->src, POLLIN, WHO_STDIN);
    for (int i = 0; i < s->n; i++) {
        tether__rank_proc *p = &s->ranks[i];
        if (p->out.fd >= 0)
            add_pollfd(s, &k, p->out.fd, POLLIN, i * NKINDS + KIND_OUT);
        if (p->err.fd >= 0)
            add_pollfd(s, &k, p->err.fd, POLLIN, i * NKINDS + KIND_ERR);
        if (tether__bcast_wants_write(s->in, i))
            add_pollfd(s, &k, s->in->fds[i], POLLOUT, i * NKINDS + KIND_IN);
    }
    return k;
}

static void dispatch(sup *s, int nfds)
{
    for (int k = 0; k < nfds; k++) {
        int who = s->who[k];
        if (!s->pfds[k].revents || who == WHO_SIGNALS)
            continue;
        if (who == WHO_STDIN) {
            tether__bcast_read(s->in);
            continue;
        }
        tether__rank_proc *p = &s->ranks[who / NKINDS];
        switch (who % NKINDS) {
        case KIND_OUT:
            tether__out_pump(&p->out, 0);
            break;
        case KIND_ERR:
            tether__out_pump(&p->err, 0);
            break;
        default:
            tether__bcast_write(s->in, who / NKINDS);
        }
    }
}

int tether__supervise(tether__rank_proc *ranks, int n, tether__bcast *in, int sigfd, int failed)
{
    sup s = {.ranks = ranks, .n = n, .in = in, .sigfd = sigfd, .status = failed, .first = -1};
    int nmax = 2 + NKINDS * n;
    s.pfds = malloc((size_t)nmax * sizeof *s.pfds);
    s.who = malloc((size_t)nmax * sizeof *s.who);
    tether__exit_order_open(&s.order, ranks, n);
    if (!s.pfds || !s.who) {
        tether__launch_say("out of memory watching %d ranks; killing them", n);
        s.status = TETHER__LAUNCH_EXIT_FAILED;
        stop_all(&s, SIGKILL);
    } else if (failed >= 0) {
        stop_all(&s, SIGTERM);
    }
    while (s.pfds && s.who && !finished(&s)) {
        int nfds = build_pollfds(&s);
        int r = poll(s.pfds, (nfds_t)nfds, poll_timeout(&s));
        int poll_errno = errno;                   /* the note below makes calls of its own */
        tether__exit_order_note(&s.order, ranks); /* before dispatch closes pipes at their end */
        if (r > 0)
            dispatch(&s, nfds);
        else if (r < 0 && poll_errno != EINTR) {
            tether__launch_say("poll failed: %s; killing every rank", strerror(poll_errno));
            break;
        }
        flush_quiet_lines(&s);
        on_signals(&s);
        reap(&s);
        escalate(&s);
    }
    for (int i = 0; i < n; i++) {
        if (!ranks[i].reaped) { /* only after an out-of-memory or poll failure */
            ranks[i].spawner->signal(&ranks[i], SIGKILL);
            if (!ranks[i].waited)
                waitpid(ranks[i].pid, NULL, 0);
            s.status = s.status < 0 ? TETHER__LAUNCH_EXIT_FAILED : s.status;
        }
        tether__out_close(&ranks[i].out);
        tether__out_close(&ranks[i].err);
    }
    tether__exit_order_close(&s.order, ranks, n);
    free(s.pfds);
    free(s.who);
    return s.status < 0 ? 0 : s.status;
}
