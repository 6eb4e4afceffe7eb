/* lab/placement/probe.c - how far apart the host has put this VM's first two CPUs right now, and
 * what that does to a bare loopback TCP exchange. No tether code: it is the yardstick tether's own
 * figures are read against.
 *
 * Why: on a shared VM the host moves the virtual CPUs between cores that share a cache and cores
 * on different dies, for seconds at a time. A cache line's round trip between the two CPUs then
 * goes from about 55 ns to about 335 ns, and every one-host figure with it: a bare 1 MiB exchange
 * from 300 to 800 us, whatever library runs (measured: docs/perf/analysis.md, 2026-11-27 b). A
 * benchmark column that falls in such a phase is slow for the machine's reasons; this probe says
 * which phase it is.
 *
 * usage: probe [ROUNDS [BYTES]]   (defaults 1 and 1048576)
 *   Each round prints one line: the cache line's round trip between the two CPUs (median of 4
 *   samples of 50 ms), then the time per exchange of 8 B and of BYTES between two processes pinned
 *   to those CPUs over one loopback TCP connection (both send, then both receive, spinning on
 *   non-blocking reads: the fewest system calls an exchange can make; median of 4 samples).
 *   `probe 0` prints only the round trip, in ns, for scripts.
 */
#ifndef _GNU_SOURCE /* the tree's build defines it */
#define _GNU_SOURCE
#endif
#ifndef __linux__
#error "lab/placement/probe.c is Linux only: it pins threads and processes to CPUs"
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SAMPLES 4

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "probe: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The k-th (0 or 1) CPU this process may use; -1 if there is none. */
static int cpu_of(int k)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set) && k-- == 0)
            return c;
    return -1;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        die("sched_setaffinity");
}

/* Every wait here spins on the other thread or process: if that one stops, the alarm ends the
 * probe with a message instead of spinning on. A round takes about a second. */
#define STALL_S 30
#define STR(x) #x
#define XSTR(x) STR(x)

static void stalled(int sig)
{
    static const char msg[] =
        "probe: no progress for " XSTR(STALL_S) " s (the other end stopped?)\n";
    ssize_t k = write(2, msg, sizeof msg - 1);
    (void)sig, (void)k;
    _exit(1);
}

static void watch(void)
{
    signal(SIGALRM, stalled);
    alarm(STALL_S);
}

/* ---- the cache line's round trip: the main thread writes odd values, the other even ones ---- */

static _Alignas(64) atomic_long line;
static atomic_int stop;
static int cpus[2];

static void *pong(void *arg)
{
    (void)arg;
    pin(cpus[1]);
    for (long v = 1; !atomic_load(&stop); v += 2) {
        while (atomic_load_explicit(&line, memory_order_acquire) != v)
            if (atomic_load_explicit(&stop, memory_order_relaxed))
                return NULL;
        atomic_store_explicit(&line, v + 1, memory_order_release);
    }
    return NULL;
}

static double round_trip_ns(void)
{
    pthread_t t;
    atomic_store(&line, 0);
    atomic_store(&stop, 0);
    if (pthread_create(&t, NULL, pong, NULL) != 0)
        die("pthread_create");
    pin(cpus[0]);
    double sample[SAMPLES];
    long v = 0;
    for (int s = 0; s < SAMPLES; s++) {
        double t0 = now_s(), t;
        long n = 0;
        do {
            for (int i = 0; i < 1000; i++, v += 2) {
                atomic_store_explicit(&line, v + 1, memory_order_release);
                while (atomic_load_explicit(&line, memory_order_acquire) != v + 2)
                    ;
            }
            n += 1000;
        } while ((t = now_s()) - t0 < 0.05);
        sample[s] = (t - t0) / (double)n * 1e9;
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    return median(sample, SAMPLES);
}

/* ---- the bare exchange ---- */

/* Send and receive bytes at once on the non-blocking fd: what both ends of an exchange do. */
static void exchange(int fd, char *out, char *in, size_t bytes)
{
    size_t sent = 0, got = 0;
    while (sent < bytes || got < bytes) {
        if (sent < bytes) {
            ssize_t k = send(fd, out + sent, bytes - sent, MSG_NOSIGNAL);
            if (k > 0)
                sent += (size_t)k;
            else if (k < 0 && errno != EAGAIN)
                die("send");
        }
        if (got < bytes) {
            ssize_t k = recv(fd, in + got, bytes - got, MSG_DONTWAIT);
            if (k > 0)
                got += (size_t)k;
            else if (k == 0) {
                fprintf(stderr, "probe: the other end of the exchange closed it\n");
                exit(1);
            } else if (errno != EAGAIN)
                die("recv");
        }
    }
}

/* Time per exchange of bytes, median of SAMPLES samples of about 50 ms. Both ends run the same
 * count: each times one exchange, they trade the counts that fit 50 ms and take the larger. */
static double exchange_us(int fd, char *out, char *in, size_t bytes)
{
    double sample[SAMPLES];
    for (int s = 0; s < SAMPLES; s++) {
        double t0 = now_s();
        exchange(fd, out, in, bytes);
        double one = now_s() - t0;
        long n = one > 0.05 ? 1 : (long)(0.05 / (one > 1e-6 ? one : 1e-6));
        memcpy(out, &n, sizeof n);
        exchange(fd, out, in, sizeof n);
        long theirs;
        memcpy(&theirs, in, sizeof theirs);
        if (theirs > n)
            n = theirs;
        t0 = now_s();
        for (long i = 0; i < n; i++)
            exchange(fd, out, in, bytes);
        sample[s] = (now_s() - t0) / (double)n * 1e6;
    }
    return median(sample, SAMPLES);
}

static int tcp_pair(int *child_fd)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &len) != 0)
        die("listen on 127.0.0.1");
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
        die("connect to 127.0.0.1");
    int s = accept(l, NULL, NULL);
    if (s < 0)
        die("accept");
    close(l);
    int one = 1;
    for (int i = 0; i < 2; i++) {
        int fd = i ? c : s;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0)
            die("socket options");
    }
    *child_fd = c;
    return s;
}

/* One round's two exchanges; the child process is the other end and reports nothing. */
static void exchanges(size_t bytes, double *small_us, double *large_us)
{
    int child_fd, fd = tcp_pair(&child_fd);
    char *out = malloc(bytes > 8 ? bytes : 8), *in = malloc(bytes > 8 ? bytes : 8);
    if (!out || !in)
        die("malloc");
    memset(out, 1, bytes);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        watch(); /* a fork does not inherit the parent's alarm */
        close(fd);
        pin(cpus[1]);
        exchange_us(child_fd, out, in, 8);
        exchange_us(child_fd, out, in, bytes);
        _exit(0);
    }
    close(child_fd);
    pin(cpus[0]);
    *small_us = exchange_us(fd, out, in, 8);
    *large_us = exchange_us(fd, out, in, bytes);
    close(fd);
    waitpid(pid, NULL, 0);
    free(out);
    free(in);
}

/* A whole number from min up, or -1. */
static long count_arg(const char *text, long min)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    return errno || end == text || *end || v < min ? -1 : v;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? count_arg(argv[1], 0) : 1;
    long bytes = argc > 2 ? count_arg(argv[2], 8) : 1048576;
    if (argc > 3 || rounds < 0 || bytes < 0) {
        if (argc <= 3)
            fprintf(stderr, "probe: %s '%s' is not a whole number of at least %d\n",
                    rounds < 0 ? "ROUNDS" : "BYTES", argv[rounds < 0 ? 1 : 2], rounds < 0 ? 0 : 8);
        fprintf(stderr, "usage: probe [ROUNDS [BYTES]]\n");
        return 2;
    }
    cpus[0] = cpu_of(0), cpus[1] = cpu_of(1);
    if (cpus[1] < 0) {
        fprintf(stderr, "probe: needs two CPUs, this process may use one\n");
        return 1;
    }
    watch();
    if (rounds == 0) {
        printf("%.0f\n", round_trip_ns());
        return 0;
    }
    for (long r = 1; r <= rounds; r++) {
        watch();
        double rt = round_trip_ns(), small, large;
        exchanges((size_t)bytes, &small, &large);
        printf(
            "round %ld: CPUs %d-%d cache line round trip %.0f ns; bare TCP exchange 8 B %.1f us, "
            "%ld B %.1f us\n",
            r, cpus[0], cpus[1], rt, small, bytes, large);
        fflush(stdout);
    }
    return 0;
}
