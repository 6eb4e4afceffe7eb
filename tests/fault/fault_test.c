/* tests/fault/fault_test.c - faults across real ranks: a rank killed or stopped mid-collective,
 * ranks calling mismatched collectives, a broken hostfile. The parent forks the ranks itself
 * (tether launch would stop the survivors when one dies) and checks how each survivor failed and
 * how fast. splitstop: the victim stops before tether_group_split; the survivors' errors must name
 * that call (the library's own all-gather inside it is not the user's). Broadcasts that disagree
 * (the data flows from the root only, so nobody would hear of it without the agreement on the
 * signature chain): bcastroot (rank 1 passes root 1, the others root 0; 4 KiB, the binomial tree,
 * or the neighbour broadcast on the ring from 4 ranks; with 2 ranks both are roots and nobody
 * receives), bcastroot16m (the same over 16 MiB, the pipelined chain), bcastcount (the last rank, a
 * leaf, passes one element more; 16 MiB, so the root and forwarders must hear of it), bcastdtype
 * (the last rank passes int32 for float32: same bytes), bcastrootcount (the root alone passes
 * one element more, 4 KiB) and bcastcamps (the last rank passes root 1, the others root 0, 4 KiB:
 * it waits for a parent that sends it nothing, and the others go on to the barrier, which the
 * heartbeats, every BEAT_S, show as a disagreement): every rank must fail that call, or else the
 * barrier right after it, with TETHER_EMISMATCH (or EPEER) within seconds, and a receiver that
 * passes it must hold the root's data. bcastleak: 50 root-mismatched 4 MiB broadcasts, each
 * followed by a barrier where it passed: each pair fails, and the rank's resident memory stays flat
 * (within 64 MiB of where it started). bcastown: every rank its own root, 200 4 KiB broadcasts and
 * nothing else, so no rank ever waits for one: the messages no call takes (core/passed.h) must
 * fail every rank with TETHER_EMISMATCH (or EPEER) before its 10th call, not pile up.
 *
 * With TETHER_TIMEOUT=0 (wait as long as peers answer heartbeats) and TETHER_HEARTBEAT=BEAT_S:
 * beatstop: the victim is SIGSTOPped while the others wait in an all-reduce; they must fail,
 * naming the missing heartbeats, once it has been silent for 3 heartbeats (plus the check's
 * quarter period and scheduling slack).
 *
 * idle: the victim stays away, busy outside tether, for 10 heartbeats before joining; every rank
 * must complete the all-reduce with the right sum, and the others must sleep while they wait
 * (little CPU used: no spinning on a shared ring or socket).
 *
 * leave: the last rank closes and exits normally while the others, split off without it, stay
 * away for 10 heartbeats (their heartbeats to it now fail) and then all-reduce: that must work.
 *
 * anykill, anysize: a receive from TETHER_ANY_SOURCE whose sender dies, or sends another size
 * (any_source_fault). anybye: one whose possible senders all closed normally (any_source_bye).
 *
 * Usage: fault_test MODE N [backend], MODE one of the above, kill, stop, mismatch, badhostfile...
 *
 * Exit 0 when every survivor saw the expected error within the limit. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/free_port.h"
#include "tether.h"

#define VICTIM 1
#define LIMIT_S 5.0      /* survivors must fail within this many seconds of the fault */
#define STOP_TIMEOUT_S 3 /* TETHER_TIMEOUT in the "stop" scenario */
#define STOP_SLACK_S 1.5 /* ...detected within this much more (it took twice the timeout) */
#define OVERALL_S 30     /* the parent kills everything after this */
#define BEAT_S 0.5       /* TETHER_HEARTBEAT in beatstop and idle */
#define BEAT_TEXT "0.5"
#define SLACK_S 1.0 /* scheduling on a loaded machine */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds this process (every thread) has used. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void write_hostfile(const char *path, int n, int broken)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    int *held = calloc((size_t)n, sizeof *held);
    if (!held) {
        perror("fault_test: ports");
        exit(2);
    }
    fputc('[', f);
    for (int r = 0; r < n; r++) {
        int port = tether__test_free_port(&held[r]);
        if (port < 0) {
            perror("fault_test: free port");
            exit(2);
        }
        fprintf(f, "%s[\"127.0.0.1:%d\"]", r ? ", " : "", port);
    }
    fputs(broken ? ", [\"127.0.0.1\"]]" : "]", f); /* broken: an extra rank with no port */
    fclose(f);
    for (int r = 0; r < n; r++) /* every port chosen, all different: free them for the ranks */
        close(held[r]);
    free(held);
}

/* A survivor's verdict: the call failed with one of the accepted codes within limit seconds, and
 * the group stays broken (the next call fails at once with the same code). */
static int judge(tether_group *g, int rank, int rc, double elapsed, double limit,
                 const int *ok_codes)
{
    int accepted = 0;
    for (const int *c = ok_codes; *c; c++)
        accepted |= rc == *c;
    printf("rank %d: %s after %.2f s: %s\n", rank, tether_err_name(rc), elapsed,
           tether_last_error());
    if (!accepted || elapsed > limit) {
        fprintf(stderr, "rank %d: expected an error within %.1f s, got %s after %.2f s\n", rank,
                limit, tether_err_name(rc), elapsed);
        return 1;
    }
    double t0 = now_s();
    int again = tether_barrier(g);
    if (again != rc && again != TETHER_EPEER && again != TETHER_ENET) {
        fprintf(stderr, "rank %d: the broken group returned %s on the next call\n", rank,
                tether_err_name(again));
        return 1;
    }
    if (now_s() - t0 > 0.5) {
        fprintf(stderr, "rank %d: the broken group took %.2f s to fail the next call\n", rank,
                now_s() - t0);
        return 1;
    }
    return 0;
}

/* Resident memory of this process in MiB (Linux; 0 elsewhere). */
static long rss_mib(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * sysconf(_SC_PAGESIZE) / (1 << 20);
}

/* The broadcast scenarios: this rank's root, count and dtype, from the mode. */
static int bcast_case(const char *mode, int rank, int size, size_t *count, tether_dtype *dt)
{
    int root = 0;
    *dt = TETHER_FLOAT32;
    *count = !strcmp(mode, "bcastroot16m") || !strcmp(mode, "bcastcount") ? 4u << 20 : 1024;
    if ((!strcmp(mode, "bcastroot") || !strcmp(mode, "bcastroot16m")) && rank == VICTIM)
        root = VICTIM;
    if (!strcmp(mode, "bcastleak")) {
        *count = 1u << 20;
        root = rank == VICTIM ? VICTIM : 0;
    }
    if (!strcmp(mode, "bcastcount") && rank == size - 1)
        (*count)++;
    if (!strcmp(mode, "bcastdtype") && rank == size - 1)
        *dt = TETHER_INT32;
    if (!strcmp(mode, "bcastrootcount") && rank == 0)
        (*count)++;
    if (!strcmp(mode, "bcastcamps") && rank == size - 1)
        root = 1;
    return root;
}

/* A broadcast that disagrees may pass on a rank that received nothing from a rank that disagrees
 * with it (a root, or a receiver whose parent agrees with it): then the next collective, a barrier
 * here, must fail on it (the signature chain). A receiver that passes must hold the root's data
 * (rank 0's: every rank filled buf with its rank + 1). */
static int bcast_verdict(tether_group *g, int rank, int rc, double elapsed, int root,
                         const float *buf, size_t count)
{
    static const int mismatch_codes[] = {TETHER_EMISMATCH, TETHER_EPEER, 0};
    if (rc != TETHER_OK)
        return judge(g, rank, rc, elapsed, LIMIT_S, mismatch_codes);
    for (size_t i = 0; root != rank && i < count; i++)
        if (buf[i] != 1.0f) {
            fprintf(stderr,
                    "rank %d: the broadcast passed with %g at element %zu, not root 0's 1\n", rank,
                    buf[i], i);
            return 1;
        }
    printf("rank %d: the broadcast passed after %.2f s; the barrier next must fail\n", rank,
           elapsed);
    double t0 = now_s();
    rc = tether_barrier(g);
    return judge(g, rank, rc, now_s() - t0, LIMIT_S, mismatch_codes);
}

/* 50 mismatched broadcasts: every one an error, memory flat. */
static int bcast_leak(tether_group *g, int rank, float *buf)
{
    size_t count;
    tether_dtype dt;
    int root = bcast_case("bcastleak", rank, tether_group_size(g), &count, &dt);
    long before = rss_mib();
    for (int i = 0; i < 50; i++) {
        int rc = tether_broadcast(g, buf, count, dt, root);
        if (rc == TETHER_OK && tether_barrier(g) == TETHER_OK) {
            fprintf(stderr, "rank %d: mismatched broadcast %d and the barrier after it passed\n",
                    rank, i);
            return 1;
        }
    }
    long after = rss_mib();
    printf("rank %d: resident memory %ld MiB before, %ld MiB after 50 mismatched broadcasts\n",
           rank, before, after);
    return after - before > 64;
}

/* bcastown: the first failure must come before call OWN_ROOT_LIMIT (what a rank holds of its peers'
 * messages stays as small), and be a disagreement. A root waits for nobody, so a rank could run
 * all its calls before a peer's first message came: each call is OWN_ROOT_WORK_US of work apart,
 * as in a program, so the ranks stay within a call or two of each other. A rank that failed stays
 * OWN_ROOT_STAY_US before it exits, so the others must learn from what it told them (its abort) or
 * saw themselves, not from a connection that closed. */
#define OWN_ROOT_CALLS 200
#define OWN_ROOT_LIMIT 10
#define OWN_ROOT_WORK_US 5000
#define OWN_ROOT_STAY_US 1000000
static int bcast_own_root(tether_group *g, int rank, float *buf)
{
    static const int mismatch_codes[] = {TETHER_EMISMATCH, TETHER_EPEER, 0};
    for (int i = 0; i < OWN_ROOT_CALLS; i++) {
        usleep(OWN_ROOT_WORK_US);
        double t0 = now_s();
        int rc = tether_broadcast(g, buf, 1024, TETHER_FLOAT32, rank);
        if (rc == TETHER_OK)
            continue;
        printf("rank %d: broadcast %d failed\n", rank, i);
        if (i >= OWN_ROOT_LIMIT) {
            fprintf(stderr, "rank %d: %d broadcasts passed before one failed (%s)\n", rank, i,
                    tether_err_name(rc));
            return 1;
        }
        int verdict = judge(g, rank, rc, now_s() - t0, LIMIT_S, mismatch_codes);
        usleep(OWN_ROOT_STAY_US);
        return verdict;
    }
    fprintf(stderr, "rank %d: %d broadcasts, each rank its own root, all passed\n", rank,
            OWN_ROOT_CALLS);
    return 1;
}

static int expect_einval(int rank, int rc, const char *what)
{
    if (rc == TETHER_EINVAL && strstr(tether_last_error(), "overlap"))
        return 0;
    fprintf(stderr, "rank %d: %s: expected TETHER_EINVAL naming the overlap, got %s: %s\n", rank,
            what, tether_err_name(rc), tether_last_error());
    return 1;
}

/* Every partial overlap refused, the in-place forms right. */
static int overlap_checks(tether_group *g, int rank, int n)
{
    enum { C = 1000 };
    float *b = calloc((size_t)(n + 1) * C, sizeof *b);
    int bad = 0;
    if (!b)
        return 1;
    bad |= expect_einval(rank, tether_all_reduce(g, b, b + 1, C, TETHER_FLOAT32, TETHER_SUM),
                         "all_reduce recv = send + 1");
    bad |= expect_einval(rank, tether_all_reduce(g, b + 1, b, C, TETHER_FLOAT32, TETHER_SUM),
                         "all_reduce send = recv + 1");
    bad |= expect_einval(rank, tether_all_gather(g, b + (size_t)rank * C + 1, b, C, TETHER_FLOAT32),
                         "all_gather send = own block + 1");
    bad |= expect_einval(
        rank, tether_reduce_scatter(g, b, b + (size_t)rank * C + 1, C, TETHER_FLOAT32, TETHER_SUM),
        "reduce_scatter recv = own block + 1");
    bad |= expect_einval(rank, tether_all_to_all(g, b, b + 1, C / n, TETHER_FLOAT32),
                         "all_to_all recv = send + 1");
    /* the group is still usable, and the in-place forms give the right elements */
    for (int i = 0; i < C; i++)
        b[i] = (float)(rank + i);
    bad |= tether_all_reduce(g, b, b, C, TETHER_FLOAT32, TETHER_SUM) != TETHER_OK;
    for (int i = 0; i < C && !bad; i++)
        bad |= b[i] != (float)(n * (n - 1) / 2 + n * i);
    for (int i = 0; i < C; i++)
        b[(size_t)rank * C + i] = (float)(rank * C + i);
    bad |= tether_all_gather(g, b + (size_t)rank * C, b, C, TETHER_FLOAT32) != TETHER_OK;
    for (int i = 0; i < n * C && !bad; i++)
        bad |= b[i] != (float)i;
    for (int i = 0; i < n * C; i++)
        b[i] = (float)(rank + i);
    bad |= tether_reduce_scatter(g, b, b + (size_t)rank * C, C, TETHER_FLOAT32, TETHER_SUM) !=
           TETHER_OK;
    for (int i = 0; i < C && !bad; i++)
        bad |= b[(size_t)rank * C + i] != (float)(n * (n - 1) / 2 + n * (rank * C + i));
    if (bad)
        fprintf(stderr, "rank %d: overlap: %s\n", rank, tether_last_error());
    free(b);
    return bad;
}

/* Init with settings that differ on rank 1: it must fail on every rank; rank 1's error names the
 * other rank's value and its own. */
static int mixed_init(const char *mode, const char *backend)
{
    int victim = atoi(getenv("TETHER_RANK")) == VICTIM, wire = !strcmp(mode, "mixedwire");
    tether_group *g = NULL;
    if (victim && wire)
        setenv("TETHER_WIRE_DTYPE", "bf16", 1);
    int rc = tether_init(victim && !wire ? "ring" : backend, 1, &g);
    const char *e = tether_last_error();
    printf("rank %s init: %s: %s\n", getenv("TETHER_RANK"), tether_err_name(rc), e);
    if (rc == TETHER_OK) {
        tether_group_free(g);
        return 1;
    }
    if (!victim)
        return 0;
    return wire ? !(strstr(e, "wire=bf16") && strstr(e, "wire=fp32"))
                : !(strstr(e, "\"ring\"") && strstr(e, "\"mesh\""));
}

/* anyalone: rank 0 alone of 2, backend "any": init fails once, within the timeout and a little,
 * naming one backend (it tried mesh, then ring: twice the timeout, the message twice). */
static int any_alone(void)
{
    tether_group *g = NULL;
    double t0 = now_s();
    int rc = tether_init("any", 1, &g);
    double elapsed = now_s() - t0;
    const char *e = tether_last_error();
    printf("rank 0 init: %s after %.2f s: %s\n", tether_err_name(rc), elapsed, e);
    const char *once = strstr(e, "links still missing");
    return rc != TETHER_ETIMEDOUT || elapsed > STOP_TIMEOUT_S + STOP_SLACK_S || !once ||
           strstr(once + 1, "links still missing") != NULL;
}

/* anykill, anysize: rank 0 waits in a receive from TETHER_ANY_SOURCE (1000 floats) and the
 * others in a receive from rank 0, which never sends. anykill: the victim is killed 0.4 s in;
 * anysize: the victim sends 1001 floats. Every survivor fails within LIMIT_S, rank 0 with
 * TETHER_EPEER (killed) or TETHER_EMISMATCH (sizes) itself. */
static int any_source_fault(tether_group *g, const char *mode, int rank, float *buf)
{
    int kill_victim = !strcmp(mode, "anykill"), src = -1, rc;
    double t0 = now_s();
    if (rank == VICTIM && kill_victim) {
        usleep(400 * 1000);
        raise(SIGKILL);
    }
    if (rank == VICTIM)
        rc = tether_send(g, buf, 1001, TETHER_FLOAT32, 0);
    if (rank == 0)
        rc = tether_recv_from(g, buf, 1000, TETHER_FLOAT32, TETHER_ANY_SOURCE, &src);
    else
        rc = tether_recv(g, buf, 1000, TETHER_FLOAT32, 0);
    static const int killed[] = {TETHER_EPEER, TETHER_ENET, 0}, sized[] = {TETHER_EMISMATCH, 0},
                     told[] = {TETHER_EMISMATCH, TETHER_EPEER, 0};
    return judge(g, rank, rc, now_s() - t0, LIMIT_S,
                 kill_victim ? killed
                 : rank == 0 ? sized
                             : told);
}

/* anybye: every rank but 0 frees the world and exits normally after a barrier; rank 0 then
 * receives from TETHER_ANY_SOURCE, at once and again after the byes have surely come. Nobody can
 * send: both fail with TETHER_EPEER within LIMIT_S (they waited for TETHER_TIMEOUT), naming every
 * possible sender. */
static int any_source_bye(tether_group *g, int rank, int size, float *buf)
{
    int rc = tether_barrier(g), src = -1, failed = 0;
    if (rank != 0 || rc != TETHER_OK) {
        tether_group_free(g);
        return rc != TETHER_OK;
    }
    for (int late = 0; late < 2 && !failed; late++) {
        if (late)
            usleep(300 * 1000);
        double t0 = now_s();
        rc = tether_recv_from(g, buf, 10, TETHER_FLOAT32, TETHER_ANY_SOURCE, &src);
        double elapsed = now_s() - t0;
        printf("rank 0: %s after %.2f s: %s\n", tether_err_name(rc), elapsed, tether_last_error());
        failed = (rc != TETHER_EPEER || elapsed > LIMIT_S);
        for (int p = 1; p < size && !late; p++) {
            char name[16];
            snprintf(name, sizeof name, "rank %d", p);
            failed |= !strstr(tether_last_error(), name);
        }
    }
    if (failed)
        fprintf(stderr, "rank 0: expected TETHER_EPEER naming every other rank within %.1f s\n",
                LIMIT_S);
    tether_group_free(g);
    return failed;
}

static int rank_main(const char *mode, const char *backend)
{
    if (!strncmp(mode, "mixed", 5))
        return mixed_init(mode, backend);
    if (!strcmp(mode, "anyalone"))
        return any_alone();
    tether_group *g = NULL;
    int rc = tether_init(backend, 1, &g);
    if (!strcmp(mode, "badhostfile")) {
        printf("init: %s: %s\n", tether_err_name(rc), tether_last_error());
        return rc == TETHER_ECONFIG && strstr(tether_last_error(), "hosts.json") ? 0 : 1;
    }
    if (rc) {
        fprintf(stderr, "init: %s: %s\n", tether_err_name(rc), tether_last_error());
        return 1;
    }
    int rank = tether_group_rank(g), size = tether_group_size(g);
    size_t count =
        8u << 20; /* 32 MiB of float32: the survivors are inside it when the fault comes */
    float *buf = calloc(count, sizeof *buf);
    if (!buf)
        return 1;
    if (tether_barrier(g))
        return 1;
    /* let every rank leave the barrier before any fault, so the fault hits the collective below */
    usleep(200 * 1000);
    if (rank == VICTIM && !strcmp(mode, "kill")) {
        usleep(200 * 1000); /* the survivors are inside the all-reduce by now */
        raise(SIGKILL);
    }
    int stop = !strcmp(mode, "stop") || !strcmp(mode, "splitstop") || !strcmp(mode, "beatstop");
    static const int stop_codes[] = {TETHER_ETIMEDOUT, TETHER_EPEER, 0};
    if (rank == VICTIM && stop) {
        usleep(200 * 1000);
        raise(SIGSTOP);
        return 0;
    }
    if (!strcmp(mode, "splitstop")) {
        tether_group *child = NULL;
        double t0 = now_s();
        rc = tether_group_split(g, 0, rank, &child);
        double elapsed = now_s() - t0;
        const char *name = "tether_group_split";
        if (!strstr(tether_last_error(), name)) {
            fprintf(stderr, "rank %d: the error does not name %s: %s\n", rank, name,
                    tether_last_error());
            return 1;
        }
        int verdict = judge(g, rank, rc, elapsed, STOP_TIMEOUT_S + STOP_SLACK_S, stop_codes);
        free(buf);
        tether_group_free(g);
        return verdict;
    }
    if (!strcmp(mode, "leave")) {
        tether_group *rest = NULL;
        if (tether_group_split(g, rank < size - 1 ? 0 : -1, rank, &rest))
            return 1;
        tether_group_free(g); /* the last rank: a normal close, its bye to every peer */
        if (!rest) {
            free(buf);
            return 0;
        }
        usleep((useconds_t)(10 * BEAT_S * 1e6));
        float x = 1.0f;
        rc = tether_all_reduce(rest, &x, &x, 1, TETHER_FLOAT32, TETHER_SUM);
        printf("rank %d: %s, sum %g: %s\n", rank, tether_err_name(rc), x,
               rc ? tether_last_error() : "");
        tether_group_free(rest);
        free(buf);
        return rc || x != (float)(size - 1);
    }
    if (!strcmp(mode, "idle")) {
        for (size_t i = 0; i < count; i++)
            buf[i] = 1.0f;
        if (rank == VICTIM)
            usleep((useconds_t)(10 * BEAT_S * 1e6)); /* busy elsewhere: only heartbeats answer */
        double t0 = now_s(), c0 = cpu_s();
        rc = tether_all_reduce(g, buf, buf, count, TETHER_FLOAT32, TETHER_SUM);
        double waited = now_s() - t0, used = cpu_s() - c0;
        printf("rank %d: %s after %.2f s in the all-reduce, %.3f s of CPU\n", rank,
               tether_err_name(rc), waited, used);
        int wrong = rc || buf[0] != (float)size || buf[count - 1] != (float)size;
        /* a rank that waits sleeps: its heartbeats and the 32 MiB sum cost 2-4 % of the wait
         * here (0.06 s of CPU in a 10 s wait at the default heartbeat: docs/tuning.md); a
         * spinning one burns a core. 20 % leaves room for sanitizers and a loaded machine */
        if (rank != VICTIM && waited > 5 * BEAT_S && used > 0.2 * waited) {
            fprintf(stderr, "rank %d: %.3f s of CPU while waiting %.2f s: it does not sleep\n",
                    rank, used, waited);
            wrong = 1;
        }
        if (wrong)
            fprintf(stderr, "rank %d: %s (%s), sum %g\n", rank, tether_err_name(rc),
                    tether_last_error(), buf[0]);
        free(buf);
        tether_group_free(g);
        return wrong;
    }
    if (!strcmp(mode, "mismatch") && rank == 0)
        count = 1000; /* the others use 32 MiB */
    if (!strcmp(mode, "overlap")) {
        int verdict = overlap_checks(g, rank, size) || tether_barrier(g) != TETHER_OK;
        free(buf);
        tether_group_free(g);
        return verdict;
    }
    if (!strcmp(mode, "anybye")) {
        int verdict = any_source_bye(g, rank, size, buf);
        free(buf);
        return verdict;
    }
    if (!strcmp(mode, "anykill") || !strcmp(mode, "anysize")) {
        int verdict = any_source_fault(g, mode, rank, buf);
        free(buf);
        tether_group_free(g);
        return verdict;
    }
    if (!strcmp(mode, "bcastleak") || !strcmp(mode, "bcastown")) {
        int verdict =
            !strcmp(mode, "bcastown") ? bcast_own_root(g, rank, buf) : bcast_leak(g, rank, buf);
        free(buf);
        tether_group_free(g);
        return verdict;
    }
    double t0 = now_s();
    if (!strncmp(mode, "bcast", 5)) {
        tether_dtype dt;
        int root = bcast_case(mode, rank, size, &count, &dt);
        for (size_t i = 0; i < count; i++)
            buf[i] = (float)(rank + 1);
        rc = tether_broadcast(g, buf, count, dt, root);
        int verdict = bcast_verdict(g, rank, rc, now_s() - t0, root, buf, count);
        free(buf);
        tether_group_free(g);
        return verdict;
    }
    if (!strcmp(mode, "rscount") || !strcmp(mode, "a2acount")) {
        size_t block = count / 4 / (size_t)size + (rank == VICTIM); /* one element more */
        float *out = buf + count / 2; /* send and recv: a quarter of buf each, apart */
        rc = !strcmp(mode, "rscount")
                 ? tether_reduce_scatter(g, buf, out, block, TETHER_FLOAT32, TETHER_SUM)
                 : tether_all_to_all(g, buf, out, block, TETHER_FLOAT32);
    } else if (!strcmp(mode, "kind") && rank == VICTIM) {
        rc = tether_broadcast(g, buf, count, TETHER_FLOAT32, 0);
    } else {
        rc = tether_all_reduce(g, buf, buf, count, TETHER_FLOAT32, TETHER_SUM);
    }
    double elapsed = now_s() - t0;
    static const int peer_codes[] = {TETHER_EPEER, TETHER_ENET, 0};
    static const int mismatch_codes[] = {TETHER_EMISMATCH, TETHER_EPEER, 0};
    int verdict;
    if (!strcmp(mode, "kill"))
        verdict = judge(g, rank, rc, elapsed, LIMIT_S, peer_codes);
    else if (!strcmp(mode, "beatstop")) { /* the victim stops 0.2 s into the all-reduce */
        /* its own finding, or a neighbour's passed on round the ring */
        static const int beat_codes[] = {TETHER_ETIMEDOUT, TETHER_EPEER, 0};
        verdict = judge(g, rank, rc, elapsed, 0.2 + 3.5 * BEAT_S + SLACK_S, beat_codes);
        if (!verdict && !strstr(tether_last_error(), "heartbeat")) {
            fprintf(stderr, "rank %d: the error does not name the heartbeats\n", rank);
            verdict = 1;
        }
    } else if (stop)
        verdict = judge(g, rank, rc, elapsed, STOP_TIMEOUT_S + STOP_SLACK_S, stop_codes);
    else
        verdict = judge(g, rank, rc, elapsed, LIMIT_S, mismatch_codes);
    (void)size;
    free(buf);
    tether_group_free(g);
    return verdict;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr,
                "usage: fault_test kill|stop|splitstop|mismatch|badhostfile|bcastroot|"
                "bcastroot16m|bcastcount|bcastdtype|bcastrootcount|bcastcamps|bcastleak|bcastown|"
                "overlap|mixedbackend|mixedwire|beatstop|idle|leave|anykill|anysize N [backend]\n");
        return 2;
    }
    const char *mode = argv[1], *backend = argc > 3 ? argv[3] : "mesh";
    int n = atoi(argv[2]);
    if (getenv("FAULT_TEST_RANK"))
        return rank_main(mode, backend);

    char dir[] = "/tmp/tether-fault-XXXXXX", path[64];
    if (!mkdtemp(dir))
        return 2;
    snprintf(path, sizeof path, "%s/hosts.json", dir);
    write_hostfile(path, n, !strcmp(mode, "badhostfile"));
    pid_t pids[64];
    int failures = 0, left = n;
    for (int r = 0; r < n; r++) {
        if (r > 0 && !strcmp(mode, "anyalone")) { /* rank 0 alone: its peers never come */
            pids[r] = 0;
            left--;
            continue;
        }
        pids[r] = fork();
        if (pids[r] == 0) {
            char rs[16], ns[16];
            snprintf(rs, sizeof rs, "%d", r);
            snprintf(ns, sizeof ns, "%d", n);
            setenv("FAULT_TEST_RANK", "1", 1);
            setenv("TETHER_RANK", rs, 1);
            setenv("TETHER_SIZE", ns, 1);
            setenv("TETHER_HOSTFILE", path, 1);
            /* this run's own token: a rank of a run beside it on the same port is refused */
            char token[32];
            snprintf(token, sizeof token, "fault-test-%d", (int)getppid());
            setenv("TETHER_JOB_TOKEN", token, 1);
            if (!strcmp(mode, "stop") || !strcmp(mode, "splitstop") || !strncmp(mode, "mixed", 5) ||
                !strcmp(mode, "anyalone") || !strcmp(mode, "anybye"))
                setenv("TETHER_TIMEOUT", "3", 1);
            if (!strcmp(mode, "splitstop")) /* each survivor times out in its own split */
                setenv("TETHER_HEARTBEAT", "60", 1);
            if (!strcmp(mode, "beatstop") || !strcmp(mode, "idle") || !strcmp(mode, "leave") ||
                !strcmp(mode, "bcastcamps")) {
                setenv("TETHER_TIMEOUT", "0", 1);
                setenv("TETHER_HEARTBEAT", BEAT_TEXT, 1);
            }
            execv("/proc/self/exe", argv);
            _exit(127);
        }
    }
    double deadline = now_s() + OVERALL_S;
    while (left > 0 && now_s() < deadline) {
        for (int r = 0; r < n; r++) {
            int st;
            if (pids[r] <= 0 || waitpid(pids[r], &st, WNOHANG) <= 0)
                continue;
            int victim = r == VICTIM && (strstr(mode, "kill") || strstr(mode, "stop"));
            if (!victim && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
                fprintf(stderr, "fault_test: rank %d failed the %s scenario\n", r, mode);
                failures++;
            }
            pids[r] = 0;
            left--;
        }
        /* the stopped victim never exits: once every survivor is done, it is the only one left */
        if (strstr(mode, "stop") && left == 1 && pids[VICTIM] > 0) {
            kill(pids[VICTIM], SIGKILL);
        }
        usleep(20 * 1000);
    }
    for (int r = 0; r < n; r++)
        if (pids[r] > 0) {
            fprintf(stderr, "fault_test: rank %d still running after %d s: killed\n", r, OVERALL_S);
            kill(pids[r], SIGKILL);
            waitpid(pids[r], NULL, 0);
            failures++;
        }
    unlink(path);
    rmdir(dir);
    printf("fault_test %s n=%d: %s\n", mode, n, failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
