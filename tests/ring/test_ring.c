/* tests/ring/test_ring.c - the ring backend between forked ranks on loopback (127.0.0.x addresses
 * standing in for cables): striping over every link, MLX hostfiles, forwarding while the ranks on
 * the way are busy elsewhere, length checks across forwarding, one message over 2 GiB, routed
 * messages passed on without being held whole (memory, crossing streams, a rank on the way that
 * closes, late receives, and the rate over shaped links in lab/netns).
 * Usage: ring_test stripes|mlx_hostfile|forward_idle|forward_mismatch|big|routed_memory|
 *        routed_stall|routed_cross|routed_cycle|routed_closing|routed_late|late_receive
 *        ring_test routed_memory|routed_stall|routed_cross|routed_cycle|routed_closing rdma
 * With "rdma" the routed cases run over the RDMA backend in ring mode instead, over the verbs
 * emulator and ring device matrix that the environment names (tests/softverbs sets it). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/tcp/engine.h"
#include "core/group.h"
#include "tests/transport/harness.h"
#include "tether.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *backend = "ring"; /* or "rdma" (usage above) */

/* The ring group of this rank, from the environment the harness set. */
static tether_group *ring_init(void)
{
    tether_group *g = NULL;
    CHECK_OK(tether_init(backend, 1, &g));
    CHECK(!strcmp(tether_group_backend(g), backend), "backend %s", tether_group_backend(g));
    return g;
}

/* Bytes each link to peer has sent, for the striping checks. */
static void link_sent(tether_group *g, int peer, int k, uint64_t *sent)
{
    uint64_t recvd;
    for (int i = 0; i < k; i++)
        CHECK_OK(tether__tcp_link_bytes((tether__tcp_ep *)g->world->ep, peer, i, &sent[i], &recvd));
}

/* A per-rank hostfile in MLX's format: for rank r, naddrs addresses 127.0.0.1, 127.0.0.2, ...
 * (ncopies times each), ports from ports[] in order. json.dumps's spacing, as mlx.launch writes. */
static const char *write_hostfile(int n, int naddrs, int ncopies, const int *ports)
{
    static char path[64];
    int p = 0;
    snprintf(path, sizeof path, "/tmp/tether-ring-%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    fputs("[", f);
    for (int r = 0; r < n; r++) {
        fputs(r ? ", [" : "[", f);
        for (int a = 0; a < naddrs; a++)
            for (int c = 0; c < ncopies; c++, p++)
                fprintf(f, "%s\"127.0.0.%d:%d\"", p % (naddrs * ncopies) ? ", " : "", a + 1,
                        ports[p]);
        fputs("]", f);
    }
    fputs("]", f);
    fclose(f);
    return path;
}

static int run_ranks(int n, const char *hostfile, int (*body)(const rank_ctx *))
{
    rank_ctx ctx = {.size = n, .hostfile = hostfile};
    int pids[MAX_RANKS], failed = 0;
    for (int r = 0; r < n; r++) {
        ctx.rank = r;
        pids[r] = harness_spawn(&ctx, body);
    }
    for (int r = 0; r < n; r++)
        failed |= harness_reap(pids[r], r);
    if (hostfile)
        unlink(hostfile);
    return failed;
}

/* Where the routed cases' n ranks meet: a ring hostfile, one address each; over RDMA (the device
 * matrix makes the ring) the coordinator on a free loopback port, and no hostfile. */
static const char *routed_world(int n)
{
    int ports[MAX_RANKS];
    char text[32];
    harness_ports(n, ports);
    if (strcmp(backend, "rdma"))
        return write_hostfile(n, 1, 1, ports);
    snprintf(text, sizeof text, "127.0.0.1:%d", ports[0]);
    setenv("TETHER_COORDINATOR", text, 1);
    snprintf(text, sizeof text, "%d", n);
    setenv("TETHER_SIZE", text, 1);
    return NULL;
}

/* ---- stripes: 4 ranks, 3 links per neighbour (three "cables"), 64 MiB all-reduce ---- */

#define STRIPE_LINKS 3
#define STRIPE_COUNT (16u << 20) /* float32: 64 MiB */

static int stripes_body(const rank_ctx *ctx)
{
    tether_group *g = ring_init();
    int n = ctx->size, right = (ctx->rank + 1) % n, left = (ctx->rank + n - 1) % n;
    float *v = malloc(STRIPE_COUNT * sizeof *v);
    CHECK(v, "malloc");
    for (size_t i = 0; i < STRIPE_COUNT; i++)
        v[i] = (float)((i + (size_t)ctx->rank) % 8);
    CHECK_OK(tether_all_reduce(g, v, v, STRIPE_COUNT, TETHER_FLOAT32, TETHER_SUM));
    for (size_t i = 0; i < STRIPE_COUNT; i++) {
        float want = 0;
        for (int r = 0; r < n; r++)
            want += (float)((i + (size_t)r) % 8);
        CHECK(v[i] == want, "element %zu is %g, expected %g", i, v[i], want);
    }
    /* Both directions of the ring carry half each: 2 (n - 1) / n of 32 MiB per direction, a
     * third on each link. Every link must carry a good part of its third. */
    uint64_t to_right[STRIPE_LINKS], to_left[STRIPE_LINKS];
    uint64_t share =
        (uint64_t)STRIPE_COUNT * 4 / 2 * 2 * (uint64_t)(n - 1) / (uint64_t)n / STRIPE_LINKS;
    link_sent(g, right, STRIPE_LINKS, to_right);
    link_sent(g, left, STRIPE_LINKS, to_left);
    for (int k = 0; k < STRIPE_LINKS; k++) {
        printf("rank %d link %d: %llu bytes to rank %d, %llu to rank %d (share %llu)\n", ctx->rank,
               k, (unsigned long long)to_right[k], right, (unsigned long long)to_left[k], left,
               (unsigned long long)share);
        CHECK(to_right[k] > share * 9 / 10 && to_left[k] > share * 9 / 10,
              "link %d carried %llu bytes right, %llu left; expected about %llu each", k,
              (unsigned long long)to_right[k], (unsigned long long)to_left[k],
              (unsigned long long)share);
    }
    free(v);
    tether_group_free(g);
    return 0;
}

static int stripes(void)
{
    /* the sockets must carry the bytes: ranks of one host would read each other's memory */
    setenv("TETHER_TCP_CMA_MIN", "0", 1);
    int ports[4 * STRIPE_LINKS];
    harness_ports(4 * STRIPE_LINKS, ports);
    return run_ranks(4, write_hostfile(4, STRIPE_LINKS, 1, ports), stripes_body);
}

/* ---- mlx_hostfile: mlx.launch's rules, read unchanged through MLX_RANK and MLX_HOSTFILE ---- */

#define MLX_RANKS 3
#define MLX_IPS 2
#define MLX_CONNS 2
#define MLX_PORTS (MLX_RANKS * MLX_IPS * MLX_CONNS)

/* A starting port with the MLX_PORTS ports from it free on 127.0.0.1 and 127.0.0.2. */
static int free_run(void)
{
    for (int base = 20000 + (int)(getpid() % 2000) * 16; base < 60000; base += MLX_PORTS) {
        int fds[MLX_PORTS * MLX_IPS], nfd = 0, ok = 1;
        for (int p = 0; p < MLX_PORTS && ok; p++)
            for (int ip = 1; ip <= MLX_IPS && ok; ip++) {
                struct sockaddr_in a = {.sin_family = AF_INET,
                                        .sin_port = htons((uint16_t)(base + p)),
                                        .sin_addr.s_addr = htonl(0x7f000000u | (uint32_t)ip)};
                int fd = socket(AF_INET, SOCK_STREAM, 0);
                fds[nfd++] = fd;
                ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
            }
        for (int i = 0; i < nfd; i++)
            close(fds[i]);
        if (ok)
            return base;
    }
    CHECK(0, "no run of %d free ports", MLX_PORTS);
    return -1;
}

static int mlx_body(const rank_ctx *ctx)
{
    char rank[16];
    snprintf(rank, sizeof rank, "%d", ctx->rank);
    unsetenv("TETHER_RANK"); /* only MLX's names, as mlx.launch sets them */
    unsetenv("TETHER_HOSTFILE");
    setenv("MLX_RANK", rank, 1);
    setenv("MLX_HOSTFILE", ctx->hostfile, 1);
    tether_group *g = ring_init();
    int right = (ctx->rank + 1) % ctx->size;
    uint64_t sent[MLX_IPS * MLX_CONNS];
    link_sent(g, right, MLX_IPS * MLX_CONNS, sent); /* one link per address of the right rank */
    double x = ctx->rank + 1;
    CHECK_OK(tether_all_reduce(g, &x, &x, 1, TETHER_FLOAT64, TETHER_SUM));
    CHECK(x == 6, "sum %g", x);
    tether_group_free(g);
    return 0;
}

static int mlx_hostfile(void)
{
    int ports[MLX_PORTS], base = free_run();
    for (int i = 0; i < MLX_PORTS; i++) /* ranks, then IPs, then connections: one counter */
        ports[i] = base + i;
    rank_ctx ctx = {.size = MLX_RANKS,
                    .hostfile = write_hostfile(MLX_RANKS, MLX_IPS, MLX_CONNS, ports)};
    int pids[MLX_RANKS], failed = 0;
    for (int r = 0; r < MLX_RANKS; r++) {
        ctx.rank = r;
        pids[r] = harness_spawn(&ctx, mlx_body);
    }
    for (int r = 0; r < MLX_RANKS; r++)
        failed |= harness_reap(pids[r], r);
    unlink(ctx.hostfile);
    return failed;
}

/* ---- forward_idle: 5 ranks; 0 talks to 2 and 3 while 1 and 4, on the way, sleep ---- */

#define IDLE_S 4.0
#define FWD_BIG ((8u << 20) + 5)

static int forward_body(const rank_ctx *ctx)
{
    tether_group *g = ring_init();
    int me = ctx->rank;
    unsigned char *big = malloc(FWD_BIG);
    CHECK(big, "malloc");
    CHECK_OK(tether_barrier(g));
    double t0 = now_s();
    if (me == 1 || me == 4) {
        usleep((useconds_t)(IDLE_S * 1e6)); /* outside tether: only the progress thread forwards */
    } else if (me == 0) {
        harness_fill(big, FWD_BIG, 7);
        for (int dst = 2; dst <= 3; dst++)
            for (int i = 0; i < 3; i++)
                CHECK_OK(tether_send(g, &i, 1, TETHER_INT32, dst));
        CHECK_OK(tether_send(g, big, FWD_BIG, TETHER_UINT8, 2));
        int back;
        CHECK_OK(tether_recv(g, &back, 1, TETHER_INT32, 3)); /* and the other way round */
        CHECK(back == 33, "got %d back from rank 3", back);
    } else {
        for (int i = 0; i < 3; i++) {
            int got = -1;
            CHECK_OK(tether_recv(g, &got, 1, TETHER_INT32, 0));
            CHECK(got == i, "message %d from rank 0 came as %d: order lost", i, got);
        }
        if (me == 2) {
            CHECK_OK(tether_recv(g, big, FWD_BIG, TETHER_UINT8, 0));
            CHECK(harness_verify(big, FWD_BIG, 7) == 0, "forwarded message corrupted");
        } else {
            int v = 33;
            CHECK_OK(tether_send(g, &v, 1, TETHER_INT32, 0));
        }
        double took = now_s() - t0;
        printf("rank %d: got everything through a sleeping rank in %.3f s\n", me, took);
        CHECK(took < IDLE_S * 3 / 4, "took %.2f s: forwarding waited for the sleeping rank", took);
    }
    CHECK_OK(tether_barrier(g));
    free(big);
    tether_group_free(g);
    return 0;
}

static int forward_idle(void)
{
    int ports[5];
    harness_ports(5, ports);
    return run_ranks(5, write_hostfile(5, 1, 1, ports), forward_body);
}

/* ---- forward_mismatch: a forwarded message keeps its length check, and the failure reaches all */

static int mismatch_body(const rank_ctx *ctx)
{
    tether_group *g = ring_init();
    double x[2] = {1, 2};
    int rc = TETHER_OK;
    CHECK_OK(tether_barrier(g));
    usleep(200 * 1000); /* every rank out of the barrier before the failure can reach it */
    if (ctx->rank == 0)
        CHECK_OK(tether_send(g, x, 2, TETHER_FLOAT64, 2)); /* may return before rank 2 checks */
    if (ctx->rank == 2) {
        rc = tether_recv(g, x, 1, TETHER_FLOAT64, 0);
        CHECK(rc == TETHER_EMISMATCH && strstr(tether_last_error(), "rank 0"),
              "recv of a longer forwarded message: %s: %s", tether_err_name(rc),
              tether_last_error());
    }
    double t0 = now_s();
    rc = tether_barrier(g); /* every rank learns of it, the ones away from rank 2 too */
    CHECK(rc == TETHER_EMISMATCH || rc == TETHER_EPEER, "barrier after the mismatch: %s",
          tether_err_name(rc));
    CHECK(now_s() - t0 < 5, "the failure took %.2f s to arrive", now_s() - t0);
    tether_group_free(g);
    return 0;
}

static int forward_mismatch(void)
{
    int ports[4];
    harness_ports(4, ports);
    return run_ranks(4, write_hostfile(4, 1, 1, ports), mismatch_body);
}

/* ---- peer_address: with two ranks, rank 1 only accepts; its messages still name rank 0's address
 */

static int peer_port; /* rank 0's port in the hostfile, set before the ranks fork */

static int peer_address_body(const rank_ctx *ctx)
{
    tether_group *g = ring_init();
    double x[2] = {1, 2};
    char want[32];
    CHECK_OK(tether_barrier(g));
    if (ctx->rank == 0)
        CHECK_OK(tether_send(g, x, 2, TETHER_FLOAT64, 1));
    if (ctx->rank == 1) {
        int rc = tether_recv(g, x, 1, TETHER_FLOAT64, 0);
        snprintf(want, sizeof want, "rank 0 (127.0.0.1:%d)", peer_port);
        CHECK(rc == TETHER_EMISMATCH && strstr(tether_last_error(), want),
              "recv of a longer message from rank 0: %s: \"%s\"; want it to name %s",
              tether_err_name(rc), tether_last_error(), want);
    }
    tether_group_free(g);
    return 0;
}

static int peer_address(void)
{
    int ports[2];
    harness_ports(2, ports);
    peer_port = ports[0];
    return run_ranks(2, write_hostfile(2, 1, 1, ports), peer_address_body);
}

/* ---- big: one message over 2 GiB between neighbours, striped over 2 links ---- */

#define BIG_LEN ((2ull << 30) + 4099)
#define BIG_BLOCK 65521 /* a prime: a block misplaced by any power of two shows */

/* Byte i of the big message: a pattern block repeated, so filling and checking run at memcpy speed.
 */
static void big_pattern(unsigned char *block)
{
    for (size_t i = 0; i < BIG_BLOCK; i++)
        block[i] = (unsigned char)(i * 7 + (i >> 8));
}

static int big_body(const rank_ctx *ctx)
{
    tether_group *g = ring_init();
    unsigned char *buf = malloc(BIG_LEN), block[BIG_BLOCK];
    CHECK(buf, "malloc of %llu bytes", (unsigned long long)BIG_LEN);
    big_pattern(block);
    for (size_t off = 0; off < BIG_LEN; off += BIG_BLOCK) /* also faults the pages in */
        memcpy(buf + off, block, BIG_LEN - off < BIG_BLOCK ? BIG_LEN - off : BIG_BLOCK);
    if (ctx->rank == 1)
        memset(buf, 0, BIG_LEN);
    CHECK_OK(tether_barrier(g)); /* both buffers ready: TETHER_TIMEOUT times the transfer alone */
    if (ctx->rank == 0) {
        CHECK_OK(tether_send(g, buf, BIG_LEN, TETHER_UINT8, 1));
    } else {
        CHECK_OK(tether_recv(g, buf, BIG_LEN, TETHER_UINT8, 0));
        for (size_t off = 0; off < BIG_LEN; off += BIG_BLOCK)
            CHECK(!memcmp(buf + off, block, BIG_LEN - off < BIG_BLOCK ? BIG_LEN - off : BIG_BLOCK),
                  "the block at byte %zu differs", off);
    }
    CHECK_OK(tether_barrier(g));
    free(buf);
    tether_group_free(g);
    return 0;
}

static int big(void)
{
    int ports[4];
    harness_ports(4, ports);
    return run_ranks(2, write_hostfile(2, 2, 1, ports), big_body);
}

/* ---- routed traffic: memory on the way, crossing streams, late receives, rate ----
 * A routed message passes through the ranks on the way a chunk at a time: they must not hold it
 * whole. A rank's peak resident memory (VmHWM, reset through clear_refs) shows what it held. */

#define ROUTED_BIG ((128u << 20) + 3)
#define ROUTED_HOLD_MAX (16u << 20) /* what a rank on the way may add: a few chunks, read-ahead */

/* Peak resident kB since the last peak_reset. */
static long peak_kb(void)
{
    char line[128];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f, "cannot read /proc/self/status");
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

static void peak_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    CHECK(f && fputs("5", f) >= 0 && fclose(f) == 0, "cannot reset the peak through clear_refs");
}

/* Stop this process for ms (SIGSTOP from a child, which sends SIGCONT after): every thread,
 * the progress thread too, so nothing reads its sockets meanwhile. */
static void stop_self(int ms)
{
    pid_t me = getpid(), pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        kill(me, SIGSTOP);
        usleep((useconds_t)ms * 1000);
        kill(me, SIGCONT);
        _exit(0);
    }
    CHECK(waitpid(pid, NULL, 0) == pid, "waitpid");
}

/* routed_memory: 4 ranks, 128 MiB from rank 0 to rank 2 through rank 1, which adds little.
 * routed_stall: the same while rank 2 stops for 0.8 s (SIGSTOP): rank 1's onward link takes
 * nothing for that long; the stall rule (TETHER__PASS_STALL_MS) lets it read a chunk at a time,
 * a few MiB in all, not whatever rank 0 sends meanwhile. Over RDMA the frames wait in rank 1's
 * receive slots, and rank 0 for credits. */
static int routed_stall_ms; /* set before the ranks fork */

static int routed_memory_body(const rank_ctx *ctx)
{
    tether_group *g = ring_init();
    int me = ctx->rank;
    unsigned char *buf = me == 0 || me == 2 ? malloc(ROUTED_BIG) : NULL;
    CHECK((me != 0 && me != 2) || buf, "malloc");
    if (me == 0)
        harness_fill(buf, ROUTED_BIG, 11);
    if (me == 2)
        memset(buf, 0xa5, ROUTED_BIG); /* resident, as rank 0's */
    CHECK_OK(tether_barrier(g));
    peak_reset();
    long before = peak_kb();
    if (me == 0)
        CHECK_OK(tether_send(g, buf, ROUTED_BIG, TETHER_UINT8, 2));
    if (me == 2) {
        tether_request *r;
        CHECK_OK(tether_irecv(g, buf, ROUTED_BIG, TETHER_UINT8, 0, 0, &r));
        if (routed_stall_ms)
            stop_self(routed_stall_ms);
        CHECK_OK(tether_wait(r));
        CHECK(harness_verify(buf, ROUTED_BIG, 11) == 0, "routed message corrupted");
    }
    CHECK_OK(tether_barrier(g));
    long added = peak_kb() - before;
    printf("rank %d: peak resident memory grew by %ld KiB\n", me, added);
    if (me == 1)
        CHECK(added < (long)(ROUTED_HOLD_MAX >> 10),
              "rank 1 passed on %u bytes and grew by %ld KiB: it held the message", ROUTED_BIG,
              added);
    free(buf);
    tether_group_free(g);
    return 0;
}

static int routed_memory(int stall_ms)
{
    routed_stall_ms = stall_ms;
    return run_ranks(4, routed_world(4), routed_memory_body);
}

/* routed_closing: 4 ranks, 16 MiB from rank 0 to rank 2 through rank 1, which frees its group at
 * once: closing, it still passes the message on, and rank 2, which sends nothing back, must still
 * return it the credits (RDMA) for that (a closing ring rank once got none: the campaign's seed
 * 809496612 stalled so). Rank 3 leaves at once too. */
#define CLOSING_BYTES (16u << 20)

static int routed_closing_body(const rank_ctx *ctx)
{
    tether_group *g = ring_init();
    int me = ctx->rank;
    if (me == 0 || me == 2) {
        unsigned char *buf = malloc(CLOSING_BYTES);
        CHECK(buf != NULL, "malloc");
        if (me == 0) {
            harness_fill(buf, CLOSING_BYTES, 13);
            CHECK_OK(tether_send(g, buf, CLOSING_BYTES, TETHER_UINT8, 2));
        } else {
            CHECK_OK(tether_recv(g, buf, CLOSING_BYTES, TETHER_UINT8, 0));
            CHECK(harness_verify(buf, CLOSING_BYTES, 13) == 0, "routed message corrupted");
        }
        free(buf);
    }
    tether_group_free(g);
    return 0;
}

/* routed_cross: 4 ranks, 0 <-> 2 and 1 <-> 3 all at once (ranks 1 and 2 pass streams both ways
 * while sending and receiving their own), each message sent twice (order kept per pair).
 * routed_cycle: 5 ranks, each sending to the rank 2 ahead and receiving from the one 2 behind, so
 * every stream goes the same way round and every rank passes one on. Chunks passing through go out
 * before a rank's own (tether__tcp_tx_queue), so the held-back links drain and no cycle of
 * them forms; with the chunks queued behind the rank's own 48 MiB, every rank held its links at
 * once until the stall rule let one read, and that rank then buffered both messages it passed on
 * (49 MiB). Over RDMA, passing frames go between a rank's own and its own leave them a credit
 * (backends/rdma/rdma_impl.h), so no cycle of full receive slots forms; with the old escape
 * (frames held 200 ms copied to the heap until one moved on) ranks added up to 76 MiB here. Both
 * cases check what a rank adds. */
#define CROSS_LEN ((24u << 20) + 9)

static int routed_cross_body(const rank_ctx *ctx)
{
    tether_group *g = ring_init();
    int me = ctx->rank, n = ctx->size, to = (me + 2) % n, from = (me + n - 2) % n;
    unsigned char *out = malloc(2 * (size_t)CROSS_LEN), *in = malloc(2 * (size_t)CROSS_LEN);
    CHECK(out && in, "malloc");
    memset(in, 0xa5, 2 * (size_t)CROSS_LEN); /* resident before the peak is taken (not 0: a
                                              * compiler may make malloc+memset a calloc) */
    for (int i = 0; i < 2; i++)
        harness_fill(out + (size_t)i * CROSS_LEN, CROSS_LEN, (uint32_t)(100 * me + i));
    peak_reset();
    long before = peak_kb();
    tether_request *reqs[4];
    for (int i = 0; i < 2; i++) /* posted before any rank sends: nothing arrives unexpected */
        CHECK_OK(tether_irecv(g, in + (size_t)i * CROSS_LEN, CROSS_LEN, TETHER_UINT8, from, 0,
                              &reqs[i]));
    CHECK_OK(tether_barrier(g));
    for (int i = 0; i < 2; i++)
        CHECK_OK(tether_isend(g, out + (size_t)i * CROSS_LEN, CROSS_LEN, TETHER_UINT8, to, 0,
                              &reqs[2 + i]));
    for (int i = 0; i < 4; i++)
        CHECK_OK(tether_wait(reqs[i]));
    for (int i = 0; i < 2; i++)
        CHECK(harness_verify(in + (size_t)i * CROSS_LEN, CROSS_LEN, (uint32_t)(100 * from + i)) ==
                  0,
              "message %d from rank %d corrupted or out of order", i, from);
    CHECK_OK(tether_barrier(g));
    long added = peak_kb() - before;
    printf("rank %d: peak resident memory grew by %ld KiB\n", me, added);
    CHECK(added < (long)(ROUTED_HOLD_MAX >> 10), "rank %d grew by %ld KiB passing streams on", me,
          added);
    free(out);
    free(in);
    tether_group_free(g);
    return 0;
}

static int routed_cross(int n)
{
    return run_ranks(n, routed_world(n), routed_cross_body);
}

/* routed_late: the receive of a large routed message is posted long after it arrived (rank 2
 * holds it as unexpected), and one posted while it arrives; both intact, in order. */
#define LATE_LEN ((16u << 20) + 1)

static int routed_late_body(const rank_ctx *ctx)
{
    tether_group *g = ring_init();
    int me = ctx->rank;
    unsigned char *buf = malloc(LATE_LEN);
    CHECK(buf, "malloc");
    CHECK_OK(tether_barrier(g));
    if (me == 0) {
        for (uint32_t i = 0; i < 2; i++) {
            harness_fill(buf, LATE_LEN, 20 + i);
            CHECK_OK(tether_send(g, buf, LATE_LEN, TETHER_UINT8, 2));
        }
    } else if (me == 2) {
        usleep(500 * 1000); /* the first message has arrived, the second is arriving */
        for (uint32_t i = 0; i < 2; i++) {
            memset(buf, 0, LATE_LEN);
            CHECK_OK(tether_recv(g, buf, LATE_LEN, TETHER_UINT8, 0));
            CHECK(harness_verify(buf, LATE_LEN, 20 + i) == 0, "late message %u corrupted", i);
        }
    }
    CHECK_OK(tether_barrier(g));
    free(buf);
    tether_group_free(g);
    return 0;
}

static int routed_late(void)
{
    int ports[4];
    harness_ports(4, ports);
    return run_ranks(4, write_hostfile(4, 1, 1, ports), routed_late_body);
}

/* late_receive: 4 ranks, rank 0 sends 64 MiB to its neighbour rank 1, 64 MiB to rank 2 (routed
 * through rank 1, behind the first on the same link) and 64 MiB as 2048 messages of 32 KiB to its
 * other neighbour rank 3, while the receivers are busy outside tether for 1.5 s, with heartbeats
 * every 0.5 s (rank 0 waits inside its calls all along; 0.2 s, whose silence limit is 0.6 s, failed
 * once in CI when a loaded host starved rank 3's threads that long). The progress threads read
 * every link as bytes come, for the routed frames; the late messages must still wait mostly in the
 * sockets (TETHER__UNEXPECTED_EAGER), not be held whole, and arrive intact. */
#define LATE_BIG ((64u << 20) + 5)
#define LATE_SMALL (32u << 10)
#define LATE_SMALLS 2048

static int late_receive_body(const rank_ctx *ctx)
{
    tether_group *g = ring_init();
    int me = ctx->rank;
    unsigned char *buf = malloc(me == 0 ? 2 * (size_t)LATE_BIG : LATE_BIG);
    CHECK(buf, "malloc");
    for (int i = 0; i < (me == 0 ? 2 : 1); i++)
        harness_fill(buf + (size_t)i * LATE_BIG, LATE_BIG, (uint32_t)(40 + (me == 0 ? i : me - 1)));
    CHECK_OK(tether_barrier(g));
    peak_reset();
    long before = peak_kb(), away = 0;
    if (me == 0) {
        tether_request *r[2];
        for (int i = 0; i < 2; i++)
            CHECK_OK(tether_isend(g, buf + (size_t)i * LATE_BIG, LATE_BIG, TETHER_UINT8, 1 + i, 0,
                                  &r[i]));
        static unsigned char small[LATE_SMALL]; /* buf is in flight */
        for (int i = 0; i < LATE_SMALLS; i++) {
            memset(small, (unsigned char)i, LATE_SMALL);
            CHECK_OK(tether_send(g, small, LATE_SMALL, TETHER_UINT8, 3));
        }
        for (int i = 0; i < 2; i++)
            CHECK_OK(tether_wait(r[i]));
    } else {
        if (me != 3)
            memset(buf, 0, LATE_BIG);
        usleep(1500 * 1000);
        away = peak_kb() - before; /* what the progress thread held while the program was away */
        if (me == 3) {
            for (int i = 0; i < LATE_SMALLS; i++) {
                CHECK_OK(tether_recv(g, buf, LATE_SMALL, TETHER_UINT8, 0));
                for (size_t k = 0; k < LATE_SMALL; k++)
                    CHECK(buf[k] == (unsigned char)i, "small late message %d corrupted", i);
            }
        } else {
            CHECK_OK(tether_recv(g, buf, LATE_BIG, TETHER_UINT8, 0));
            CHECK(harness_verify(buf, LATE_BIG, (uint32_t)(40 + me - 1)) == 0,
                  "late message from rank 0 corrupted");
        }
    }
    CHECK_OK(tether_barrier(g));
    long added = peak_kb() - before;
    printf("rank %d: peak resident memory grew by %ld KiB while away, %ld KiB in all\n", me, away,
           added);
    CHECK(away < (long)(ROUTED_HOLD_MAX >> 10),
          "rank %d grew by %ld KiB while away: it held what was sent to it", me, away);
    /* rank 3, receiving 2048 messages in turn, reads ahead of its receives from inside its calls
     * (they read on, for what passes through): only its time away is bounded */
    CHECK(me == 3 || added < (long)(ROUTED_HOLD_MAX >> 10),
          "rank %d grew by %ld KiB: it held a late %u-byte message", me, added, LATE_BIG);
    free(buf);
    tether_group_free(g);
    return 0;
}

static int late_receive(void)
{
    int ports[4];
    setenv("TETHER_HEARTBEAT", "0.5", 1);
    setenv("TETHER_TCP_CMA_MIN", "0", 1); /* ranks standing in for machines: the bytes cross */
    harness_ports(4, ports);
    return run_ranks(4, write_hostfile(4, 1, 1, ports), late_receive_body);
}

#define USAGE                                                                                      \
    "stripes|mlx_hostfile|forward_idle|forward_mismatch|big|routed_memory|routed_stall|"           \
    "routed_cross|routed_cycle|routed_closing|routed_late|late_receive|peer_address\n"             \
    "       ring_test routed_memory|routed_stall|routed_cross|routed_cycle|routed_closing rdma"

int main(int argc, char **argv)
{
    const char *t = argc > 1 ? argv[1] : "";
    if (argc > 2) {
        if (strcmp(argv[2], "rdma") || strncmp(t, "routed_", 7) || !strcmp(t, "routed_late")) {
            fprintf(stderr, "usage: %s " USAGE "\n", argv[0]);
            return 2;
        }
        backend = "rdma";
    }
    setenv("TETHER_JOB_TOKEN", "ring-test", 1);
    /* one 2 GiB receive is one completion: on a loaded machine it may take a minute */
    setenv("TETHER_TIMEOUT", !strcmp(t, "big") ? "150" : "30", 1);
    if (!strcmp(t, "stripes"))
        return stripes();
    if (!strcmp(t, "mlx_hostfile"))
        return mlx_hostfile();
    if (!strcmp(t, "forward_idle"))
        return forward_idle();
    if (!strcmp(t, "forward_mismatch"))
        return forward_mismatch();
    if (!strcmp(t, "peer_address"))
        return peer_address();
    if (!strcmp(t, "big"))
        return big();
    if (!strcmp(t, "routed_memory"))
        return routed_memory(0);
    if (!strcmp(t, "routed_stall"))
        return routed_memory(800);
    if (!strcmp(t, "routed_cross"))
        return routed_cross(4);
    if (!strcmp(t, "routed_cycle"))
        return routed_cross(5);
    if (!strcmp(t, "routed_late"))
        return routed_late();
    if (!strcmp(t, "routed_closing"))
        return run_ranks(4, routed_world(4), routed_closing_body);
    if (!strcmp(t, "late_receive"))
        return late_receive();
    fprintf(stderr, "usage: %s " USAGE "\n", argv[0]);
    return 2;
}
