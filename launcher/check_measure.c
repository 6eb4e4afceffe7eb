/* launcher/check_measure.c - a rank of `tether check` with hosts: report this machine, form the
 * group, measure every ordered pair of ranks (8-byte round trip, bandwidth) one pair at a time so
 * nothing else shares the link, and let rank 0 print the reports and the matrices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "launch_say.h"
#include "tether.h"
#include "tools/strbuf.h"

#define REPORT_MAX (32 << 10) /* a machine's report, as gathered to rank 0 */
#define LAT_WARMUP 5
#define LAT_ITERS 50
#define BW_CHUNK (4u << 20)
#define SLOW_FRACTION (1.0 / 3) /* a link under a third of the median bandwidth is "far below" */

typedef struct measured {
    double rtt_us; /* 8-byte round trip */
    double mbps;   /* MB/s, this rank sending */
} measured;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Say why this rank stops, with its host. */
static int rank_failed(int rank, const char *what, int rc)
{
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    fprintf(stderr, "tether check: rank %d on %s: %s: %s (%s)\n", rank, host, what,
            tether_strerror(rc), tether_last_error());
    return TETHER__LAUNCH_EXIT_FAILED;
}

/* bytes from this rank to peer (send) or back (receive), in chunks, then a 1-byte
 * acknowledgement the other way so the sender's clock covers the arrival. */
static int stream_bytes(tether_group *g, int peer, char *buf, size_t bytes, int send)
{
    int rc = 0;
    for (size_t done = 0; done < bytes && rc == 0; done += BW_CHUNK) {
        size_t n = bytes - done < BW_CHUNK ? bytes - done : BW_CHUNK;
        rc = send ? tether_send(g, buf, n, TETHER_UINT8, peer)
                  : tether_recv(g, buf, n, TETHER_UINT8, peer);
    }
    if (rc == 0)
        rc = send ? tether_recv(g, buf, 1, TETHER_UINT8, peer)
                  : tether_send(g, buf, 1, TETHER_UINT8, peer);
    return rc;
}

/* 8-byte round trips, the initiator sending first. */
static int ping_pong(tether_group *g, int peer, char *buf, int initiator, int iters)
{
    int rc = 0;
    for (int i = 0; i < iters && rc == 0; i++) {
        rc = initiator ? tether_send(g, buf, 8, TETHER_UINT8, peer)
                       : tether_recv(g, buf, 8, TETHER_UINT8, peer);
        if (rc == 0)
            rc = initiator ? tether_recv(g, buf, 8, TETHER_UINT8, peer)
                           : tether_send(g, buf, 8, TETHER_UINT8, peer);
    }
    return rc;
}

/* One ordered pair, from either end: warm up (connection, TCP window), then time round trips
 * and the bandwidth transfer; m is filled on the sending side only. */
static int measure_pair(tether_group *g, int peer, int sender, char *buf, size_t bytes, measured *m)
{
    size_t warm = bytes < BW_CHUNK ? bytes : BW_CHUNK;
    double t0;
    int rc = ping_pong(g, peer, buf, sender, LAT_WARMUP);
    if (rc == 0)
        rc = stream_bytes(g, peer, buf, warm, sender);
    t0 = now_s();
    if (rc == 0)
        rc = ping_pong(g, peer, buf, sender, LAT_ITERS);
    if (m)
        m->rtt_us = (now_s() - t0) * 1e6 / LAT_ITERS;
    t0 = now_s();
    if (rc == 0)
        rc = stream_bytes(g, peer, buf, bytes, sender);
    if (m)
        m->mbps = (double)bytes / (now_s() - t0) / 1e6;
    return rc;
}

/* Every ordered pair in turn, a barrier between pairs. row[d] gets what this rank measured
 * sending to d. */
static int measure_all(tether_group *g, size_t bytes, measured *row)
{
    int me = tether_group_rank(g), n = tether_group_size(g), rc = 0;
    char *buf = calloc(1, bytes < BW_CHUNK ? (bytes > 8 ? bytes : 8) : BW_CHUNK);
    if (!buf)
        return TETHER_ENOMEM;
    for (int s = 0; s < n && rc == 0; s++)
        for (int d = 0; d < n && rc == 0; d++) {
            if (s == d)
                continue;
            if (me == s)
                rc = measure_pair(g, d, 1, buf, bytes, &row[d]);
            else if (me == d)
                rc = measure_pair(g, s, 0, buf, bytes, NULL);
            if (rc == 0)
                rc = tether_barrier(g);
        }
    free(buf);
    return rc;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Print one matrix; field picks rtt_us or mbps. */
static void print_matrix(const measured *all, int n, const char *title, int bandwidth)
{
    printf("\n%s (row: from, column: to):\n       ", title);
    for (int d = 0; d < n; d++)
        printf("%10s%d", "r", d);
    printf("\n");
    for (int s = 0; s < n; s++) {
        printf("  r%-4d", s);
        for (int d = 0; d < n; d++) {
            const measured *m = &all[s * n + d];
            if (s == d)
                printf("%11s", "-");
            else
                printf("%11.1f", bandwidth ? m->mbps : m->rtt_us);
        }
        printf("\n");
    }
}

/* Warn about links under SLOW_FRACTION of the median bandwidth; returns how many. */
static int warn_slow(const measured *all, int n)
{
    int npairs = n * (n - 1), k = 0, slow = 0;
    double *bw = malloc((size_t)npairs * sizeof *bw), median;
    if (!bw || npairs == 0) {
        free(bw);
        return 0;
    }
    for (int s = 0; s < n; s++)
        for (int d = 0; d < n; d++)
            if (s != d)
                bw[k++] = all[s * n + d].mbps;
    qsort(bw, (size_t)npairs, sizeof *bw, compare_double);
    median = bw[npairs / 2];
    for (int s = 0; s < n; s++)
        for (int d = 0; d < n; d++)
            if (s != d && all[s * n + d].mbps < SLOW_FRACTION * median) {
                printf(
                    "warning: r%d -> r%d: %.1f MB/s, under a third of the median %.1f MB/s: check "
                    "that link (cable, port, MTU, a route through another interface)\n",
                    s, d, all[s * n + d].mbps, median);
                slow++;
            }
    free(bw);
    return slow;
}

/* Rank 0: every machine's report, in rank order. Returns the number of problems in them. */
static int print_reports(const char *reports, const int *nproblems, int n)
{
    int total = 0;
    for (int r = 0; r < n; r++) {
        printf("== rank %d ==\n%s", r, reports + (size_t)r * REPORT_MAX);
        total += nproblems[r];
    }
    return total;
}

/* This machine's report as one text, cut to REPORT_MAX for gathering. */
static void local_report(char *out, int *nproblems)
{
    tether__hostcheck_report r = {0};
    char *text, *problems;
    tether__hostcheck_local(&r);
    text = tether__sb_take(&r.text, "the report");
    problems = tether__sb_take(&r.problems, "the report");
    snprintf(out, REPORT_MAX, "%sproblems:\n%s", text ? text : "",
             r.nproblems ? (problems ? problems : "") : "  none\n");
    *nproblems = r.nproblems;
    free(text);
    free(problems);
}

/* Gather reports and measurements at every rank; rank 0 prints. */
static int run(tether_group *g, const char *report, int nproblems, size_t bytes)
{
    int me = tether_group_rank(g), n = tether_group_size(g), rc, bad = 0;
    char *reports = malloc((size_t)n * REPORT_MAX);
    int *problems = malloc((size_t)n * sizeof *problems);
    measured *row = calloc((size_t)n, sizeof *row), *all = calloc((size_t)n * n, sizeof *all);
    if (!reports || !problems || !row || !all)
        rc = TETHER_ENOMEM;
    else if ((rc = tether_all_gather(g, report, reports, REPORT_MAX, TETHER_UINT8)) == 0 &&
             (rc = tether_all_gather(g, &nproblems, problems, 1, TETHER_INT32)) == 0 &&
             (rc = measure_all(g, bytes, row)) == 0)
        rc = tether_all_gather(g, row, all, 2 * (size_t)n, TETHER_FLOAT64);
    if (rc == 0 && me == 0) {
        bad = print_reports(reports, problems, n);
        printf("\nlinks over %s, %d ranks, %zu bytes per bandwidth measurement:\n",
               tether_group_backend(g), n, bytes);
        print_matrix(all, n, "8-byte round trip, microseconds", 0);
        print_matrix(all, n, "bandwidth, MB/s", 1);
        bad += warn_slow(all, n);
        printf("\n%s\n",
               bad ? "tether check: problems found (see above)" : "tether check: all good");
        fflush(stdout);
    }
    free(reports);
    free(problems);
    free(row);
    free(all);
    if (rc != 0)
        return rank_failed(me, "measuring the links", rc);
    return bad ? TETHER__LAUNCH_EXIT_FAILED : 0;
}

int tether__hostcheck_rank(size_t bytes)
{
    char *report = calloc(1, REPORT_MAX);
    int nproblems = 0, rc;
    tether_group *g = NULL;
    if (!report)
        return rank_failed(-1, "report", TETHER_ENOMEM);
    local_report(report, &nproblems);
    rc = tether_init("any", 1, &g);
    if (rc != 0) {
        /* No group, no gathering: this machine's report goes out here, for the user to see why. */
        fputs(report, stdout);
        fflush(stdout);
        free(report);
        return rank_failed(-1, "cannot form the group", rc);
    }
    rc = run(g, report, nproblems, bytes);
    tether_group_free(g);
    free(report);
    return rc;
}
