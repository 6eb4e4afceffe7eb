/* rdma_fault.c - the RDMA backend's failures over the verbs emulator: every one an error, never
 * wrong data.
 *
 * Usage: rdma_fault
 * kill|writekill|drop|creditdrop|lastdrop|awaydrop|dup|mismatch|anykill|anysize|anybye|nodev|nogid|qplimit|idle|
 * beatstop|beatidle N uc|rc
 * [ring|cm] (TETHER_IBVERBS_LIB names the emulator; "ring" links each rank to its two ring
 * neighbours only, so the backend runs in ring mode and forwards; "cm": no device matrix, rank r at
 * 127.0.0.<r+1> in the hostfile, connected through rdma_cm, TETHER_RDMACM_LIB naming the
 * emulator's, linux profile) The parent forks N ranks that bootstrap through a coordinator on
 * 127.0.0.1 (tether launch would stop the survivors when one dies) and judges their exit codes:
 * kill     rank 1 kills itself mid-all-reduce: every survivor fails with EPEER or ENET in < 5 s.
 * writekill the same in 32 MiB all-reduces (rc: their messages go by RDMA WRITE, rendezvous).
 * stop     rank 1 stops itself (SIGSTOP) mid-all-reduce, TETHER_TIMEOUT=3: every survivor fails
 * (ETIMEDOUT, or EPEER from the one that timed out) in < 5 s. drop     each rank's 7th frame is
 * lost (SOFTVERBS_DROP_NTH): every rank must finish with the right data (uc: the backend resends
 * it; rc: the QP does). creditdrop rank 0 sends rank 1 a 40-frame message: rank 1's first frame, a
 * control frame (credits, acknowledgements), is lost; every rank must finish. lastdrop with
 * TETHER_TIMEOUT=0, rank 0 sends rank 1 a one-frame message, which is lost, then waits for rank 1's
 * answer: nothing else goes until it is resent; every rank must finish in < 5 s. awaydrop the same,
 * but rank 0 stays away from tether (sleeping) for 1.5 s after its send: its heartbeat thread must
 * resend, so rank 1 has the message within 0.75 s. dup TETHER_RDMA_RESEND_MS=1 and completions 2 ms
 * late (SOFTVERBS_DELAY_US): frames go again before their acknowledgements are seen, so ranks
 * receive duplicates (ctest checks the count in the TETHER_VERBOSE=1 line), and every rank must
 * finish. mismatch rank 0 all-reduces one element more: every rank fails with EMISMATCH. bcastroot,
 * bcastcount: rank 1 broadcasts from root 1 where the others name root 0, or the last rank (a leaf)
 * one element more: every rank fails that call with EMISMATCH or, if it received nothing from a
 * rank that disagrees, the barrier after it (EMISMATCH, or EPEER from a rank that left). nodev no
 * devices: tether_is_available("rdma") is 0 and a strict init says why (EUNAVAIL). nogid    devices
 * without an IPv4-mapped GID: ECONFIG naming the fix. qplimit  one device for every peer with 1 QP
 * allowed: a clear error about the QP limit. anykill  rank 0 receives from TETHER_ANY_SOURCE, the
 * others from rank 0; rank 1 is killed: every survivor fails with EPEER or ENET in < 5 s. anysize
 * the same, but rank 1 sends one element more than rank 0 takes: every rank fails with EMISMATCH
 * (or EPEER). anybye   the others close normally, then rank 0 receives from TETHER_ANY_SOURCE:
 * EPEER in < 5 s. idle     (ring) ranks 0 and 2 trade messages through ranks 1 and 3 while those
 * sleep outside tether: their progress threads must forward, so it finishes long before they wake.
 *   early    (ring) ranks 1 and 3 close while 0 and 2, away 3 s, have yet to trade messages
 *            through them (UC: 1 % of frames lost): they linger and pass them on; all finish.
 *   stranded (ring) the same, rank 0 closing too, and rank 2 receives from it: EPEER once the
 *            neighbours have left for good (within LIMIT_S + 5 s).
 * With TETHER_TIMEOUT=0 (heartbeats alone decide) and TETHER_HEARTBEAT=BEAT_S:
 *   beatstop rank 1 is SIGSTOPped while the others all-reduce: they fail naming the missing
 *            heartbeats once it has been silent for 3 of them (plus a quarter period and slack).
 *   beatidle rank 1 stays away 10 heartbeats before joining: every rank completes.
 * Two cables per pair (rdma_en<j> and rdma_en<j+4>), 32 MiB all-reduces for DOWN_AT_S + 2 s:
 *   cable     rank 0's second cable to rank 1 dies at DOWN_AT_S (SOFTVERBS_DEVICE_DOWN): every
 *             result right, no call slower than 3x the slowest call before it (ctest checks the
 *             stderr line saying the cable left).
 *   cableback the same, the cable back 2 s later, calls going on until 2.5 s after: ctest checks
 *             (TETHER_VERBOSE=1) that it carried frames again.
 *   firstback the same with the first cable (rdma_en1), which in ring mode also carries the
 *             frames passing through.
 *   lastcable both of rank 0's cables to rank 1 die: every rank fails in < 5 s (ctest checks
 *             rank 0 says no cable is left).
 * And with TETHER_TIMEOUT=30, so that only the cable's silence can end a wait in time:
 *   silent    rank 0's second cable to rank 1 goes silent at DOWN_AT_S (SOFTVERBS_DEVICE_SILENT: QP
 *             and port up, nothing carried) for good, calls going on until 3 s after (it is tried
 *             again after a second, and taken out again): every result right, no call slower than
 *             3x the slowest before plus SILENT_SLACK_S (ctest checks both ranks' lines give the
 *             reason: no acknowledgement on UC, a QP error on RC).
 *   lastsilent both of rank 0's cables to rank 1 go silent: every rank fails in < 5 s (ctest
 *             checks rank 0 says no cable is left, and why). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tether.h"

enum { SAW_ERROR = 0, FINISHED = 1, SETUP_FAILED = 2, WRONG_DATA = 3, SLOW = 4 };
#define COUNT 1000
#define ROUNDS 60
#define LIMIT_S 5.0
#define OVERALL_S 40
#define ADDRESSED                                                                                  \
    "rdma_en0:10.0.%r.1,rdma_en1:10.1.%r.1,rdma_en2:10.2.%r.1,rdma_en3:10.3.%r.1,"                 \
    "rdma_en4:10.4.%r.1,rdma_en5:10.5.%r.1,rdma_en6:10.6.%r.1,rdma_en7:10.7.%r.1"

/* cm: the device of each rank's hostfile address (RoCE v2: its GID is the address) */
#define CM_ADDRESSED                                                                               \
    "mlx5_0:127.0.0.1,mlx5_1:127.0.0.2,mlx5_2:127.0.0.3,mlx5_3:127.0.0.4,mlx5_4:127.0.0.5,"        \
    "mlx5_5:127.0.0.6"

#define BIG_COUNT (8 << 20) /* floats: 32 MiB */
/* The cable dies when a first 32 MiB call has ended on a loaded machine (CI runs two such tests at
 * once), and calls go on for AFTER_BACK_S once it is back, time for both sides to take it back:
 * under ASan, whose calls take about 3 times as long (3.5 s at N = 4), later and longer. */
#if defined(__SANITIZE_ADDRESS__)
#define DOWN_AT_S 6.0
#define DOWN_AT_TEXT "6"
#define BACK_AT_S 8.0
#define BACK_AT_TEXT "8"
#define AFTER_BACK_S 9.0
#else
#define DOWN_AT_S 3.0
#define DOWN_AT_TEXT "3"
#define BACK_AT_S 5.0
#define BACK_AT_TEXT "5"
#define AFTER_BACK_S 2.5
#endif
/* A silent cable is taken out after about half a second (backends/rdma/silence.c), and may be
 * tried again once and cost that again: the calls this hits are that much slower. */
#define SILENT_SLACK_S 1.5

/* Heartbeats: a rank silent for 3 of them is taken for stopped. Under ASan, beside another such
 * test on 2 cores, a rank's heartbeat thread once went 1.6 s without a turn (firstback.4.uc.ring in
 * CI): there 1 s. */
#if defined(__SANITIZE_ADDRESS__)
#define BEAT_S 1.0
#define BEAT_TEXT "1"
#else
#define BEAT_S 0.5
#define BEAT_TEXT "0.5"
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Rounds of all-reduce with every element checked; how the first failure looked decides. */
static int run_rounds(tether_group *g, int victim, int sig, int count, int at)
{
    int rank = tether_group_rank(g), n = tether_group_size(g);
    float *v = malloc((size_t)count * sizeof *v);
    for (int round = 0; round < ROUNDS; round++) {
        double t0 = now_s();
        int rc;
        if (rank == victim && round == at)
            raise(sig);
        for (int i = 0; i < count; i++)
            v[i] = (float)(rank + round + i % 5);
        if ((rc = tether_all_reduce(g, v, v, (size_t)count, TETHER_FLOAT32, TETHER_SUM)) !=
            TETHER_OK) {
            fprintf(stderr, "rank %d, round %d: %s after %.2f s: %s\n", rank, round,
                    tether_err_name(rc), now_s() - t0, tether_last_error());
            free(v);
            return now_s() - t0 > LIMIT_S ? SLOW : SAW_ERROR;
        }
        for (int i = 0; i < count; i++)
            if (v[i] != (float)(n * (n - 1) / 2 + n * (round + i % 5))) {
                fprintf(stderr, "rank %d, round %d: element %d is %g: WRONG DATA\n", rank, round, i,
                        (double)v[i]);
                free(v);
                return WRONG_DATA;
            }
    }
    free(v);
    return FINISHED;
}

/* 32 MiB all-reduces, each checked, until 2 s after the cable death: an error (within LIMIT_S of
 * its call's start), or every call no slower than 3x the slowest before the death (the median
 * is printed too; one call on this shared emulator varies 3x with no fault at all). */
static int cable_rounds(tether_group *g, double until_s, double slack_s)
{
    int rank = tether_group_rank(g), n = tether_group_size(g), round, nbefore = 0;
    float *v = malloc(BIG_COUNT * sizeof *v);
    double start = now_s(), before[64], worst = 0;
    for (round = 0;; round++) {
        double t0 = now_s(), took;
        int rc, go = t0 - start < until_s;
        /* every rank makes the same number of calls: rank 0's clock decides */
        if ((rc = tether_broadcast(g, &go, 1, TETHER_INT32, 0)) != TETHER_OK) {
            fprintf(stderr, "rank %d, round %d: %s: %s\n", rank, round, tether_err_name(rc),
                    tether_last_error());
            free(v);
            return now_s() - t0 > LIMIT_S ? SLOW : SAW_ERROR;
        }
        if (!go)
            break;
        for (int i = 0; i < BIG_COUNT; i++)
            v[i] = (float)(rank + round + i % 5);
        if ((rc = tether_all_reduce(g, v, v, BIG_COUNT, TETHER_FLOAT32, TETHER_SUM)) != TETHER_OK) {
            fprintf(stderr, "rank %d, round %d: %s after %.2f s: %s\n", rank, round,
                    tether_err_name(rc), now_s() - t0, tether_last_error());
            free(v);
            return now_s() - t0 > LIMIT_S ? SLOW : SAW_ERROR;
        }
        for (int i = 0; i < BIG_COUNT; i++)
            if (v[i] != (float)(n * (n - 1) / 2 + n * (round + i % 5))) {
                fprintf(stderr, "rank %d, round %d: element %d is %g: WRONG DATA\n", rank, round, i,
                        (double)v[i]);
                free(v);
                return WRONG_DATA;
            }
        took = now_s() - t0;
        if (now_s() - start < DOWN_AT_S - 0.1 && nbefore < 64) /* the emulator counts from init */
            before[nbefore++] = took;
        else if (took > worst)
            worst = took;
    }
    free(v);
    if (nbefore == 0) {
        fprintf(stderr, "rank %d: no call ended before the cable died: the test needs retuning\n",
                rank);
        return SLOW;
    }
    for (int i = 1; i < nbefore; i++) /* insertion sort: a handful */
        for (int j = i; j > 0 && before[j] < before[j - 1]; j--) {
            double t = before[j];
            before[j] = before[j - 1];
            before[j - 1] = t;
        }
    fprintf(stderr,
            "rank %d: %d calls; over both cables median %.3f s, slowest %.3f s; slowest after "
            "%.3f s\n",
            rank, round, before[nbefore / 2], before[nbefore - 1], worst);
    return worst > 3 * before[nbefore - 1] + slack_s ? SLOW : FINISHED;
}

/* Rank 0 passes one element more than the others. */
static int mismatched_call(tether_group *g, const char *mode)
{
    int rank = tether_group_rank(g), last = tether_group_size(g) - 1;
    size_t count = COUNT + (!strcmp(mode, "mismatch") ? rank == 0 : 4 * COUNT + (rank == last));
    float *v = calloc(count, sizeof *v);
    int rc =
        !strcmp(mode, "mismatch") ? tether_all_reduce(g, v, v, count, TETHER_FLOAT32, TETHER_SUM)
        : !strcmp(mode, "bcastcount") ? tether_broadcast(g, v, count, TETHER_FLOAT32, 0)
                                      : tether_broadcast(g, v, count, TETHER_FLOAT32, rank == 1);
    fprintf(stderr, "rank %d: %s: %s\n", rank, tether_err_name(rc), tether_last_error());
    free(v);
    if (rc == TETHER_OK && strcmp(mode, "mismatch")) { /* the signature chain tells it now */
        rc = tether_barrier(g);
        fprintf(stderr, "rank %d: the barrier after: %s: %s\n", rank, tether_err_name(rc),
                tether_last_error());
        if (rc == TETHER_EPEER)
            return SAW_ERROR;
    }
    return rc == TETHER_EMISMATCH ? SAW_ERROR : rc == TETHER_OK ? FINISHED : SETUP_FAILED;
}

/* bcastown: every rank its own root, 200 broadcasts and nothing else, so no rank waits for one: the
 * messages no call takes (core/passed.h) must fail every rank, EMISMATCH or EPEER from a rank that
 * learned first, before its 10th call (SLOW after it), not pile up. A root waits for nobody: 5 ms
 * of work between calls keep the ranks within a call or two of each other. */
static int own_root_loop(tether_group *g)
{
    int rank = tether_group_rank(g), rc = TETHER_OK, calls = 0;
    float *v = calloc(COUNT, sizeof *v);
    while (calls < 200 && rc == TETHER_OK) {
        usleep(5000);
        rc = tether_broadcast(g, v, COUNT, TETHER_FLOAT32, rank);
        calls++;
    }
    fprintf(stderr, "rank %d: broadcast %d: %s: %s\n", rank, calls - 1, tether_err_name(rc),
            tether_last_error());
    free(v);
    if (rc == TETHER_OK)
        return FINISHED;
    if (rc != TETHER_EMISMATCH && rc != TETHER_EPEER)
        return SETUP_FAILED;
    return calls > 10 ? SLOW : SAW_ERROR;
}

/* anykill, anysize: rank 0 receives from TETHER_ANY_SOURCE while the others receive from rank 0,
 * which never sends; rank 1 is killed 0.4 s in, or sends one element more than rank 0 takes. */
static int any_source_fault(tether_group *g, const char *mode)
{
    int rank = tether_group_rank(g), src = -1, rc;
    float *v = calloc(COUNT + 1, sizeof *v);
    double t0 = now_s();
    if (rank == 1 && !strcmp(mode, "anykill")) {
        usleep(400 * 1000);
        raise(SIGKILL);
    }
    if (rank == 1)
        tether_send(g, v, COUNT + 1, TETHER_FLOAT32, 0);
    rc = rank == 0 ? tether_recv_from(g, v, COUNT, TETHER_FLOAT32, TETHER_ANY_SOURCE, &src)
                   : tether_recv(g, v, COUNT, TETHER_FLOAT32, 0);
    double took = now_s() - t0;
    fprintf(stderr, "rank %d: %s after %.2f s: %s\n", rank, tether_err_name(rc), took,
            tether_last_error());
    free(v);
    return rc == TETHER_OK ? FINISHED : took > LIMIT_S ? SLOW : SAW_ERROR;
}

/* anybye: every rank but 0 frees the world after a barrier (it says bye); rank 0 then receives
 * from TETHER_ANY_SOURCE: nobody can send, so it must fail with EPEER within LIMIT_S (it waited
 * for TETHER_TIMEOUT). SAW_ERROR only for that error; another is a wrong outcome. */
static int any_source_bye(tether_group *g)
{
    int src = -1, rc = tether_barrier(g);
    if (rc != TETHER_OK)
        return SETUP_FAILED;
    if (tether_group_rank(g) != 0)
        return FINISHED;
    float v[4];
    double t0 = now_s();
    rc = tether_recv_from(g, v, 4, TETHER_FLOAT32, TETHER_ANY_SOURCE, &src);
    double took = now_s() - t0;
    fprintf(stderr, "rank 0: %s after %.2f s: %s\n", tether_err_name(rc), took,
            tether_last_error());
    return rc != TETHER_EPEER ? WRONG_DATA : took > LIMIT_S ? SLOW : SAW_ERROR;
}

/* early: ranks 1 and 3 (ring: the only ways between 0 and 2) free the world after a barrier, while
 * 0 and 2 stay away EARLY_AWAY_S, longer than a closing rank once lingered, then trade
 * EARLY_ROUNDS messages each way through them (1 % of frames lost on UC, SOFTVERBS_LOSS): the
 * closing ranks must pass them on, and frames to them be resent, until 0 and 2 close too.
 * stranded: rank 0 closes too, and rank 2 receives from it: nothing can come, so once its
 * neighbours have left for good (CLOSE_IDLE_S with nothing passing through) it fails with EPEER. */
#define EARLY_AWAY_S 3
#define EARLY_ROUNDS 10
#define CLOSE_IDLE_S 5 /* backends/rdma/rdma.c's CLOSE_IDLE_MS */
static int early_close(tether_group *g, int stranded)
{
    int rank = tether_group_rank(g), rc = tether_barrier(g);
    float v[COUNT];
    if (rc != TETHER_OK)
        return SETUP_FAILED;
    if (rank % 2 || (stranded && rank == 0))
        return FINISHED;
    double t0 = now_s();
    if (stranded) {
        rc = tether_recv(g, v, COUNT, TETHER_FLOAT32, 0);
        double took = now_s() - t0;
        fprintf(stderr, "rank 2: %s after %.2f s: %s\n", tether_err_name(rc), took,
                tether_last_error());
        return rc != TETHER_EPEER ? WRONG_DATA : took > LIMIT_S + CLOSE_IDLE_S ? SLOW : SAW_ERROR;
    }
    sleep(EARLY_AWAY_S);
    for (int i = 0; i < EARLY_ROUNDS && rc == TETHER_OK; i++) {
        float out[COUNT];
        for (int k = 0; k < COUNT; k++)
            out[k] = (float)(rank * 1000 + i + k);
        if (rank == 0 && (rc = tether_send(g, out, COUNT, TETHER_FLOAT32, 2)) == TETHER_OK)
            rc = tether_recv(g, v, COUNT, TETHER_FLOAT32, 2);
        if (rank == 2 && (rc = tether_recv(g, v, COUNT, TETHER_FLOAT32, 0)) == TETHER_OK)
            rc = tether_send(g, out, COUNT, TETHER_FLOAT32, 0);
        for (int k = 0; rc == TETHER_OK && k < COUNT; k++)
            if (v[k] != (float)((2 - rank) * 1000 + i + k))
                return WRONG_DATA;
    }
    fprintf(stderr, "rank %d: %s %.2f s after the others closed: %s\n", rank, tether_err_name(rc),
            now_s() - t0, rc ? tether_last_error() : "");
    return rc == TETHER_OK ? FINISHED : SAW_ERROR;
}

/* Ranks 0 and 2 trade IDLE_ROUNDS messages each way (forwarded: they are not neighbours) while the
 * others sleep IDLE_SLEEP_S outside tether; then everyone meets in a barrier. */
#define IDLE_ROUNDS 10
#define IDLE_SLEEP_S 3
static int idle_forwarders(tether_group *g)
{
    int rank = tether_group_rank(g), rc = TETHER_OK;
    double t0 = now_s(), took;
    float *v = calloc(COUNT, sizeof *v);
    if (rank % 2) {
        sleep(IDLE_SLEEP_S);
    } else {
        for (int i = 0; i < IDLE_ROUNDS && rc == TETHER_OK; i++) {
            for (int k = 0; k < COUNT; k++)
                v[k] = (float)(rank * 1000 + i + k);
            rc = rank == 0 ? tether_send(g, v, COUNT, TETHER_FLOAT32, 2)
                           : tether_recv(g, v, COUNT, TETHER_FLOAT32, 0);
            for (int k = 0; rank == 2 && rc == TETHER_OK && k < COUNT; k++)
                if (v[k] != (float)(i + k)) {
                    fprintf(stderr, "rank 2, round %d: element %d is %g: WRONG DATA\n", i, k,
                            (double)v[k]);
                    free(v);
                    return WRONG_DATA;
                }
        }
    }
    took = now_s() - t0;
    free(v);
    if (rc == TETHER_OK)
        rc = tether_barrier(g);
    fprintf(stderr, "rank %d: %s after %.2f s\n", rank, tether_err_name(rc), took);
    return rc != TETHER_OK                              ? SAW_ERROR
           : rank % 2 == 0 && took > IDLE_SLEEP_S / 2.0 ? SLOW
                                                        : FINISHED;
}

/* beatstop and beatidle: rank 1 stops for good, or stays away 10 heartbeats, while the others
 * wait in an all-reduce. */
static int away_peer(tether_group *g, int stops)
{
    int rank = tether_group_rank(g), n = tether_group_size(g);
    float v[4] = {1, 1, 1, 1};
    if (tether_barrier(g))
        return SETUP_FAILED;
    if (rank == 1) {
        usleep(200 * 1000); /* the others are inside the all-reduce */
        if (stops)
            raise(SIGSTOP); /* the parent kills it once the others are done */
        usleep((useconds_t)(10 * BEAT_S * 1e6));
    }
    double t0 = now_s();
    int rc = tether_all_reduce(g, v, v, 4, TETHER_FLOAT32, TETHER_SUM);
    double took = now_s() - t0;
    fprintf(stderr, "rank %d: %s after %.2f s: %s\n", rank, tether_err_name(rc), took,
            rc ? tether_last_error() : "");
    if (!stops)
        return rc ? SAW_ERROR : v[0] == (float)n ? FINISHED : WRONG_DATA;
    if (rc != TETHER_ETIMEDOUT && rc != TETHER_EPEER)
        return SETUP_FAILED;
    if (!strstr(tether_last_error(), "heartbeat"))
        return SETUP_FAILED;
    return took > 0.2 + 3.5 * BEAT_S + 1.0 ? SLOW : SAW_ERROR;
}

/* creditdrop (big), lastdrop and awaydrop (away): rank 0 sends rank 1 a message of 40 frames or of
 * one, (away: sleeps AWAY_S outside tether,) then waits for rank 1's one-element answer; every rank
 * then meets in a barrier. */
#define BIG_FRAMES 40
#define AWAY_S 1.5
static int lost_frame(tether_group *g, int big, int away)
{
    int rank = tether_group_rank(g), rc = TETHER_OK;
    size_t count = big ? BIG_FRAMES * (64u << 10) / sizeof(float) : 4;
    float *v = malloc(count * sizeof *v), answer = 1;
    double t0 = now_s(), took;
    if (rank == 0) {
        for (size_t i = 0; i < count; i++)
            v[i] = (float)i;
        rc = tether_send(g, v, count, TETHER_FLOAT32, 1);
        if (away)
            usleep((useconds_t)(AWAY_S * 1e6));
        if (rc == TETHER_OK)
            rc = tether_recv(g, &answer, 1, TETHER_FLOAT32, 1);
    } else if (rank == 1) {
        rc = tether_recv(g, v, count, TETHER_FLOAT32, 0);
        if (away && now_s() - t0 > AWAY_S / 2) {
            fprintf(stderr,
                    "rank 1: the message came after %.2f s: not resent while rank 0 was "
                    "away\n",
                    now_s() - t0);
            free(v);
            return SLOW;
        }
        for (size_t i = 0; rc == TETHER_OK && i < count; i++)
            if (v[i] != (float)i) {
                fprintf(stderr, "rank 1: element %zu is %g: WRONG DATA\n", i, (double)v[i]);
                free(v);
                return WRONG_DATA;
            }
        if (rc == TETHER_OK)
            rc = tether_send(g, &answer, 1, TETHER_FLOAT32, 0);
    }
    took = now_s() - t0;
    free(v);
    if (rc == TETHER_OK)
        rc = tether_barrier(g);
    fprintf(stderr, "rank %d: %s after %.2f s: %s\n", rank, tether_err_name(rc), took,
            rc ? tether_last_error() : "");
    return rc ? SAW_ERROR : took > LIMIT_S ? SLOW : FINISHED;
}

/* Init must fail with code and a message containing words. */
static int init_fails(int code, const char *words)
{
    tether_group *g = NULL;
    int rc = tether_init("rdma", 1, &g);
    fprintf(stderr, "rank %s: %s: %s\n", getenv("TETHER_RANK"), tether_err_name(rc),
            tether_last_error());
    if (rc == TETHER_OK)
        tether_group_free(g);
    return rc == code && strstr(tether_last_error(), words) ? SAW_ERROR : SETUP_FAILED;
}

static int rank_main(const char *mode)
{
    tether_group *g;
    int rc;
    if (!strcmp(mode, "nodev"))
        return tether_is_available("rdma") ? SETUP_FAILED
                                           : init_fails(TETHER_EUNAVAIL, "no RDMA device");
    if (!strcmp(mode, "nogid"))
        return init_fails(TETHER_ECONFIG, "IPv4-mapped GID");
    if (!strcmp(mode, "qplimit"))
        return init_fails(TETHER_ENET, "QPs");
    if ((rc = tether_init("rdma", 1, &g)) != TETHER_OK) {
        fprintf(stderr, "init: %s: %s\n", tether_err_name(rc), tether_last_error());
        return SETUP_FAILED;
    }
    if (!strcmp(mode, "bcastown"))
        rc = own_root_loop(g);
    else if (!strcmp(mode, "mismatch") || !strncmp(mode, "bcast", 5))
        rc = mismatched_call(g, mode);
    else if (!strcmp(mode, "idle"))
        rc = idle_forwarders(g);
    else if (!strcmp(mode, "early") || !strcmp(mode, "stranded"))
        rc = early_close(g, !strcmp(mode, "stranded"));
    else if (!strcmp(mode, "anybye"))
        rc = any_source_bye(g);
    else if (!strncmp(mode, "any", 3))
        rc = any_source_fault(g, mode);
    else if (!strncmp(mode, "beat", 4))
        rc = away_peer(g, !strcmp(mode, "beatstop"));
    else if (strstr(mode, "silent"))
        rc = cable_rounds(g, DOWN_AT_S + 3, SILENT_SLACK_S);
    else if (strstr(mode, "cable") || !strcmp(mode, "firstback"))
        rc = cable_rounds(g, strstr(mode, "back") ? BACK_AT_S + AFTER_BACK_S : DOWN_AT_S + 2, 0);
    else if (strstr(mode, "drop") && strcmp(mode, "drop"))
        rc = lost_frame(g, !strcmp(mode, "creditdrop"), !strcmp(mode, "awaydrop"));
    else if (!strcmp(mode, "writekill")) /* 32 MiB: the others' WRITEs to it under way */
        rc = run_rounds(g, 1, SIGKILL, BIG_COUNT, 3);
    else
        rc = run_rounds(g, !strcmp(mode, "kill") || !strcmp(mode, "stop") ? 1 : -1,
                        !strcmp(mode, "stop") ? SIGSTOP : SIGKILL, COUNT, 20);
    tether_group_free(g);
    return rc;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
        getsockname(fd, (struct sockaddr *)&a, &len)) {
        perror("rdma_fault: free port");
        exit(2);
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* The N x N device matrix: rank i reaches rank j on rdma_en<j> (two cables: and rdma_en<j+4>), or
 * everyone on rdma_en0; in a ring only the neighbours i - 1 and i + 1 (null elsewhere). */
static void write_devices(const char *path, int n, int one_device, int ring, int two)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s[", i ? "," : "");
        for (int j = 0; j < n; j++)
            if (i == j || (ring && j != (i + 1) % n && j != (i + n - 1) % n))
                fprintf(f, "%snull", j ? "," : "");
            else if (two)
                fprintf(f, "%s[\"rdma_en%d\",\"rdma_en%d\"]", j ? "," : "", j, j + 4);
            else
                fprintf(f, "%s\"rdma_en%d\"", j ? "," : "", one_device ? 0 : j);
        fputc(']', f);
    }
    fputs("]\n", f);
    fclose(f);
}

/* cm: the per-rank hostfile, rank r at 127.0.0.<r+1> (its port is the mesh backend's, unused) */
static void write_hosts(const char *path, int n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputc('[', f);
    for (int r = 0; r < n; r++)
        fprintf(f, "%s[\"127.0.0.%d:%d\"]", r ? "," : "", r + 1, 20000 + r);
    fputs("]\n", f);
    fclose(f);
}

/* cm: the hostfile instead of the matrix, the rdma backend asked for by name */
static void set_cm_env(const char *hosts)
{
    unsetenv("TETHER_IBV_DEVICES");
    setenv("TETHER_HOSTFILE", hosts, 1);
    setenv("TETHER_BACKEND", "rdma", 1);
    setenv("SOFTVERBS_PROFILE", "linux", 1);
    setenv("SOFTVERBS_DEVICES", CM_ADDRESSED, 1);
}

static void set_env(const char *mode, int n, const char *qp, const char *dir, const char *devs)
{
    char v[64];
    snprintf(v, sizeof v, "127.0.0.1:%d", free_port());
    setenv("TETHER_COORDINATOR", v, 1);
    snprintf(v, sizeof v, "%d", n);
    setenv("TETHER_SIZE", v, 1);
    setenv("TETHER_JOB_TOKEN", "rdma-fault-test", 1);
    setenv("TETHER_TIMEOUT",
           strstr(mode, "silent")  ? "30"
           : !strcmp(mode, "stop") ? "3"
           : strncmp(mode, "beat", 4) && strcmp(mode, "lastdrop") && strcmp(mode, "awaydrop") &&
                   strcmp(mode, "stranded")
               ? "4"
               : "0",
           1);
    setenv("TETHER_HEARTBEAT", BEAT_TEXT, 1);
    setenv("TETHER_RDMA_QP", qp, 1);
    setenv("TETHER_IBV_DEVICES", devs, 1);
    setenv("SOFTVERBS_DIR", dir, 1);
    setenv("SOFTVERBS_PROFILE", "apple", 1);
    setenv("SOFTVERBS_DEVICES",
           !strcmp(mode, "nodev")   ? ""
           : !strcmp(mode, "nogid") ? "rdma_en0,rdma_en1,rdma_en2,rdma_en3"
                                    : ADDRESSED,
           1);
    if (!strcmp(mode, "drop"))
        setenv("SOFTVERBS_DROP_NTH", "7", 1);
    if (!strcmp(mode, "dup")) {
        setenv("SOFTVERBS_DELAY_US", "2000", 1);
        setenv("TETHER_RDMA_RESEND_MS", "1", 1);
    }
    if (!strcmp(mode, "early") && !strcmp(qp, "uc"))
        setenv("SOFTVERBS_LOSS", "0.01", 1);
    if (!strcmp(mode, "qplimit"))
        setenv("SOFTVERBS_MAX_QP", "1", 1);
    if (strstr(mode, "cable") || !strcmp(mode, "firstback"))
        setenv("SOFTVERBS_DEVICE_DOWN",
               !strcmp(mode, "cable")       ? "rdma_en5#0@" DOWN_AT_TEXT
               : !strcmp(mode, "cableback") ? "rdma_en5#0@" DOWN_AT_TEXT "-" BACK_AT_TEXT
               : !strcmp(mode, "firstback") ? "rdma_en1#0@" DOWN_AT_TEXT "-" BACK_AT_TEXT
                                            : "rdma_en5#0@" DOWN_AT_TEXT
                                              ",rdma_en1#0@" DOWN_AT_TEXT,
               1);
    if (strstr(mode, "silent"))
        setenv("SOFTVERBS_DEVICE_SILENT",
               !strcmp(mode, "silent") ? "rdma_en5#0@" DOWN_AT_TEXT
                                       : "rdma_en5#0@" DOWN_AT_TEXT ",rdma_en1#0@" DOWN_AT_TEXT,
               1);
}

/* Fork the ranks; exit codes into codes[]. -1 for one killed by a signal or by us at OVERALL_S. */
static void run_ranks(const char *mode, int n, int *codes)
{
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    double deadline = now_s() + OVERALL_S;
    for (int r = 0; r < n; r++) {
        if ((pids[r] = fork()) == 0) {
            char rs[16];
            snprintf(rs, sizeof rs, "%d", r);
            setenv("TETHER_RANK", rs, 1);
            /* the sender's only frame, or the receiver's first: a control frame */
            if (((!strcmp(mode, "lastdrop") || !strcmp(mode, "awaydrop")) && r == 0) ||
                (!strcmp(mode, "creditdrop") && r == 1))
                setenv("SOFTVERBS_DROP_NTH", "1", 1);
            _exit(rank_main(mode));
        }
    }
    for (int k = 0; k < n; k++) { /* rank 1 last: stopped, it never exits: killed then */
        int r = k < n - 1 ? (k == 0 ? 0 : k + 1) : 1, status;
        if (r == 1 && (!strcmp(mode, "stop") || !strcmp(mode, "beatstop")))
            kill(pids[r], SIGKILL);
        while (waitpid(pids[r], &status, WNOHANG) == 0) {
            if (now_s() > deadline) {
                fprintf(stderr, "rank %d still running after %d s: killed\n", r, OVERALL_S);
                kill(pids[r], SIGKILL);
            }
            usleep(20000);
        }
        codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    free(pids);
}

/* Modes where every rank finishes: lost frames are resent and duplicates dropped (both QP types),
 * idle ranks' threads forward, a late rank is waited for. */
static int must_finish(const char *mode)
{
    return strstr(mode, "drop") || !strcmp(mode, "dup") || !strcmp(mode, "idle") ||
           !strcmp(mode, "early") || !strcmp(mode, "cable") || strstr(mode, "back") ||
           !strcmp(mode, "beatidle") || !strcmp(mode, "silent");
}

/* Whether the ranks' exit codes are what mode demands. */
static int judge(const char *mode, const int *codes, int n)
{
    int errors = 0;
    for (int r = 0; r < n; r++) {
        if (codes[r] == WRONG_DATA || codes[r] == SETUP_FAILED || codes[r] == SLOW)
            return 1;
        if ((strstr(mode, "kill") || strstr(mode, "stop")) && r != 1 && codes[r] != SAW_ERROR)
            return 1;
        if (must_finish(mode) && codes[r] != FINISHED)
            return 1;
        errors += codes[r] == SAW_ERROR;
    }
    if (!strcmp(mode, "anybye")) /* rank 0 fails, the others closed normally */
        return codes[0] != SAW_ERROR;
    if (!strcmp(mode, "stranded")) /* rank 2 fails, the others closed normally */
        return codes[2] != SAW_ERROR;
    if (must_finish(mode))
        return 0;
    return !strstr(mode, "kill") && !strstr(mode, "stop") && errors != n;
}

int main(int argc, char **argv)
{
    char dir[] = "/tmp/rdma-fault-XXXXXX", devs[64], hosts[64];
    int n, codes[16], bad, ring = argc == 5 && !strcmp(argv[4], "ring"),
                           cm = argc == 5 && !strcmp(argv[4], "cm");
    if ((argc != 4 && !ring && !cm) || (n = atoi(argv[2])) < 2 || n > 6 ||
        (strcmp(argv[3], "uc") && strcmp(argv[3], "rc"))) {
        fprintf(stderr, "usage: rdma_fault "
                        "kill|stop|drop|creditdrop|lastdrop|awaydrop|dup|mismatch|bcastroot|"
                        "bcastcount|bcastown|nodev|nogid|"
                        "qplimit|idle|early|stranded|beatstop|beatidle|cable|cableback|firstback|"
                        "lastcable|silent|lastsilent N(2-6) "
                        "uc|rc "
                        "[ring|cm]\n");
        return 2;
    }
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    snprintf(devs, sizeof devs, "%s/devices.json", dir);
    write_devices(devs, n, !strcmp(argv[1], "qplimit"), ring,
                  strstr(argv[1], "cable") || strstr(argv[1], "silent") ||
                      !strcmp(argv[1], "firstback"));
    set_env(argv[1], n, argv[3], dir, devs);
    snprintf(hosts, sizeof hosts, "%s/hosts.json", dir);
    if (cm) {
        write_hosts(hosts, n);
        set_cm_env(hosts);
    }
    run_ranks(argv[1], n, codes);
    bad = judge(argv[1], codes, n);
    for (int r = 0; r < n; r++)
        fprintf(stderr, "rank %d exited %d\n", r, codes[r]);
    unlink(devs);
    unlink(hosts);
    rmdir(dir); /* the emulator unlinked its sockets; a crash may leave some, which is harmless */
    fprintf(stderr, "rdma_fault %s %d %s%s: %s\n", argv[1], n, argv[3],
            ring ? " ring"
            : cm ? " cm"
                 : "",
            bad ? "FAILED" : "ok");
    return bad;
}
