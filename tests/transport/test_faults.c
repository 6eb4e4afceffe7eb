/* tests/transport/test_faults.c - failures the mesh must report clearly, and stray clients.
 * Mismatched messages, a peer that exits, abort frames, strays during set-up, a busy port. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backends/net/frame.h"
#include "backends/net/handshake.h"
#include "harness.h"
#include "tests/support/handshake_client.h"

static int contains(const char *text, const char *part)
{
    return strstr(text, part) != NULL;
}

#define CHECK_MSG(part)                                                                            \
    CHECK(contains(tether_last_error(), part), "message \"%s\" lacks \"%s\"", tether_last_error(), \
          part)

/* Rank 0 sends 8 bytes, rank 1 expects 16: rank 1 fails naming both, aborts (as the core does)
 * and rank 0, waiting for an answer, learns the mismatch from the abort frame. */
static int mismatch_body(const rank_ctx *ctx)
{
    tether__ep *ep = harness_open(ctx);
    tether__tag t = {.group = 0, .seq = 4, .step = 0, .sig = 77};
    char buf[16] = {0};
    if (ctx->rank == 0) {
        CHECK_OK(harness_send(ep, 1, buf, 8, t));
        int rc = harness_recv(ep, 1, buf, 8, t);
        CHECK(rc == TETHER_EMISMATCH, "rank 0 got %s: %s", tether_err_name(rc),
              tether_last_error());
        CHECK_MSG("rank 1 reported:");
        CHECK_MSG("16 bytes");
    } else {
        int rc = harness_recv(ep, 0, buf, 16, t);
        CHECK(rc == TETHER_EMISMATCH, "rank 1 got %s", tether_err_name(rc));
        CHECK_MSG("8 bytes");
        CHECK_MSG("16 bytes");
        CHECK_MSG("rank 0 (127.0.0.1:");
        char msg[TETHER__ERRMSG_MAX];
        snprintf(msg, sizeof msg, "%s", tether_last_error());
        tether__mesh_ops.abort(ep, TETHER_EMISMATCH, msg);
        /* broken for good: later calls fail at once with the same code */
        tether__req *r;
        CHECK(tether__mesh_ops.isend(ep, 0, buf, 1, t, &r) == TETHER_EMISMATCH, "not sticky");
    }
    tether__mesh_ops.close(ep);
    return 0;
}

/* ---- p2p_mismatch: the sender of an eager message the receiver did not expect learns of it ----
 */

static const char *p2p_backend = "mesh"; /* or "ring" */

/* Where rank 1 says it has failed: a file named for the test process, both ranks' parent. */
static void p2p_flag(char *path, size_t n)
{
    snprintf(path, n, "/tmp/tether-p2p-mismatch-%d", (int)getppid());
}

/* Rank 0 sends 2 doubles, small enough to go at once; rank 1 receives 1 and fails with
 * TETHER_EMISMATCH. Rank 0's send returned TETHER_OK before rank 1 looked; once rank 1 has failed
 * (and aborted, as the core does), rank 0's next send to it fails with the mismatch too, and the
 * group stays broken. */
static int p2p_mismatch_body(const rank_ctx *ctx)
{
    tether_group *g = NULL;
    double x[2] = {1, 2};
    char flag[64];
    p2p_flag(flag, sizeof flag);
    CHECK_OK(tether_init(p2p_backend, 1, &g));
    CHECK_OK(tether_barrier(g));
    if (ctx->rank == 0) {
        CHECK_OK(tether_send(g, x, 2, TETHER_FLOAT64, 1)); /* eager: before rank 1 checks */
        for (int i = 0; i < 1000 && access(flag, F_OK) != 0; i++)
            usleep(10 * 1000);
        usleep(100 * 1000); /* its abort on the way */
        int rc = tether_send(g, x, 1, TETHER_FLOAT64, 1);
        CHECK(rc == TETHER_EMISMATCH, "send after the receiver failed: %s: %s", tether_err_name(rc),
              tether_last_error());
        CHECK_MSG("rank 1 reported:");
        CHECK_MSG("16 bytes");
        CHECK(tether_barrier(g) == TETHER_EMISMATCH, "the group is not broken");
        unlink(flag);
    } else {
        int rc = tether_recv(g, x, 1, TETHER_FLOAT64, 0);
        CHECK(rc == TETHER_EMISMATCH, "recv of a longer message: %s", tether_err_name(rc));
        FILE *f = fopen(flag, "w");
        CHECK(f != NULL, "cannot write %s", flag);
        fclose(f);
        while (access(flag, F_OK) == 0) /* rank 0 still checking: keep the links up */
            usleep(10 * 1000);
    }
    tether_group_free(g);
    return 0;
}

/* Another collective (signature) on the same call number is a mismatch even at another step. */
static int signature_body(const rank_ctx *ctx)
{
    tether__ep *ep = harness_open(ctx);
    tether__tag t = {
        .group = 0, .seq = 9, .step = ctx->rank ? 0 : 3, .sig = ctx->rank ? 0x1111 : 0x2222};
    int x = 0;
    if (ctx->rank == 0) {
        CHECK_OK(harness_send(ep, 1, &x, sizeof x, t));
        usleep(300 * 1000); /* let rank 1 fail on its own before we close */
    } else {
        usleep(100 * 1000); /* the message is unexpected when the receive comes */
        int rc = harness_recv(ep, 0, &x, sizeof x, t);
        CHECK(rc == TETHER_EMISMATCH, "got %s", tether_err_name(rc));
        CHECK_MSG("signature 00002222");
        CHECK_MSG("signature 00001111");
    }
    tether__mesh_ops.close(ep);
    return 0;
}

/* Rank 1 exits at once. Rank 0 waits on it and gets EPEER naming it. Rank 2 waits only on rank 0,
 * which never sends: it must still notice rank 1's exit (wait polls every link). */
static int peer_exit_body(const rank_ctx *ctx)
{
    tether__ep *ep = harness_open(ctx);
    tether__tag t = {.group = 0, .seq = 1, .step = 0, .sig = 1};
    int x;
    if (ctx->rank == 1)
        _exit(0); /* no close, no goodbye: as a crash would */
    int rc = harness_recv(ep, ctx->rank == 0 ? 1 : 0, &x, sizeof x, t);
    CHECK(rc == TETHER_EPEER, "rank %d got %s: %s", ctx->rank, tether_err_name(rc),
          tether_last_error());
    CHECK_MSG("rank 1 (127.0.0.1:");
    CHECK_MSG("closed the connection");
    usleep(300 * 1000); /* rank 2 must see rank 1 go first, not our close */
    tether__mesh_ops.close(ep);
    return 0;
}

/* abort() reaches every peer with its reason and code. */
static int abort_body(const rank_ctx *ctx)
{
    tether__ep *ep = harness_open(ctx);
    tether__tag t = {.group = 0, .seq = 1, .step = 0, .sig = 1};
    int x;
    if (ctx->rank == 0) {
        tether__mesh_ops.abort(ep, TETHER_ETIMEDOUT, "rank 0 timed out in all_reduce (test)");
        tether__req *r;
        CHECK(tether__mesh_ops.irecv(ep, 1, &x, sizeof x, t, &r) == TETHER_ETIMEDOUT,
              "abort not sticky");
    } else {
        int rc = harness_recv(ep, 0, &x, sizeof x, t);
        CHECK(rc == TETHER_EPEER, "rank %d got %s", ctx->rank, tether_err_name(rc));
        CHECK_MSG("rank 0 reported: rank 0 timed out in all_reduce (test)");
        usleep(300 * 1000); /* the other rank must see the abort first, not our close */
    }
    tether__mesh_ops.close(ep);
    return 0;
}

/* Rank 0 sends 1 MiB, which rank 1 reads from rank 0's memory (backends/tcp/cma.h), then aborts
 * before rank 1 has posted its receive. Rank 0's buffer stays valid here, but a program may free
 * it once abort() returns: rank 1 must fail, not deliver what it read. */
static int cma_withdraw_body(const rank_ctx *ctx)
{
    const size_t len = 1u << 20;
    tether__ep *ep = harness_open(ctx);
    tether__tag t = {.group = 0, .seq = 1, .step = 0, .sig = 1};
    unsigned char *buf = calloc(1, len);
    tether__req *r;
    CHECK(buf, "calloc");
    if (ctx->rank == 0) {
        CHECK_OK(tether__mesh_ops.isend(ep, 1, buf, len, t, &r));
        tether__mesh_ops.abort(ep, TETHER_ETIMEDOUT, "rank 0 gave up (test)");
        usleep(500 * 1000); /* rank 1 reads while the buffer is still mapped */
    } else {
        usleep(200 * 1000);
        int rc = harness_recv(ep, 0, buf, len, t);
        CHECK(rc == TETHER_EPEER, "got %s: %s", tether_err_name(rc), tether_last_error());
        CHECK_MSG("rank 0 (127.0.0.1:");
        CHECK_MSG("failed or closed while this rank read a message from its memory");
    }
    free(buf);
    tether__mesh_ops.close(ep);
    return 0;
}

/* A hello with another job's token. With read_answer, run the handshake: the rank's challenge
 * must not prove itself under our token, its verdict must be "wrong job token", and no byte
 * string of the real token (right, when known) may be in anything it sent. Else reset the
 * connection at once, so the rank's challenge meets a closed socket (EPIPE, which must not become
 * a SIGPIPE killing the rank). */
static void wrong_token_as(int port, int read_answer, const char *token, const char *right)
{
    int fd = harness_connect(port);
    if (!read_answer) {
        unsigned char b[TETHER__HELLO_SIZE];
        tether__hello h = {.version = TETHER__PROTO_VERSION, .size = 2, .nlinks = 1};
        tether__hello_encode(&h, b);
        CHECK(write(fd, b, sizeof b) == (ssize_t)sizeof b, "write");
        struct linger reset = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        close(fd);
        return;
    }
    tether__test_hs hs = {.rank = 0, .size = 2, .token = token};
    int status = tether__test_handshake(fd, &hs);
    CHECK(status == TETHER__HS_BAD_TOKEN, "verdict %d on a wrong token", status);
    CHECK(hs.got_challenge && !hs.challenge_proved, "challenge %d, proved under a wrong token %d",
          hs.got_challenge, hs.challenge_proved);
    CHECK(!right || !tether__test_holds(hs.seen, hs.nseen, right),
          "the rank's answers hold the job token");
    close(fd);
}

/* 1 when a whole message came in. */
static int read_full(int fd, unsigned char msg[TETHER__HELLO_SIZE])
{
    size_t got = 0;
    for (ssize_t n;
         got < TETHER__HELLO_SIZE && (n = read(fd, msg + got, TETHER__HELLO_SIZE - got)) > 0;)
        got += (size_t)n;
    return got == TETHER__HELLO_SIZE;
}

static void wrong_token(int port, int read_answer)
{
    wrong_token_as(port, read_answer, "another-job", "right-token");
}

static int strays_body(const rank_ctx *ctx)
{
    tether__ep *ep = harness_open(ctx);
    tether__tag t = {.group = 0, .seq = 1, .step = 0, .sig = 1};
    int x = 1234;
    CHECK_OK(ctx->rank == 0 ? harness_send(ep, 1, &x, sizeof x, t)
                            : harness_recv(ep, 0, &x, sizeof x, t));
    CHECK(x == 1234, "got %d", x);
    CHECK_OK(ctx->rank == 1 ? harness_send(ep, 0, &x, sizeof x, t)
                            : harness_recv(ep, 1, &x, sizeof x, t));
    tether__mesh_ops.close(ep);
    return 0;
}

/* Rank 1 (pid1) waits alone while a test plays a stray; now rank 0 starts and both must form the
 * mesh and run body: 0 when both did. */
static int join_rank0(rank_ctx *ctx, int pid1, int (*body)(const rank_ctx *))
{
    ctx->rank = 0;
    int pid0 = harness_spawn(ctx, body);
    return harness_reap(pid0, 0) | harness_reap(pid1, 1);
}

/* Rank 1 (which accepts) starts alone; strays hit its port: garbage, a wrong token (one resets
 * before the answer), one that says nothing, one that closes at once. Then rank 0 starts, and
 * both must form the mesh. */
static int run_strays(void)
{
    const char *env[] = {"TETHER_JOB_TOKEN=right-token", "TETHER_TIMEOUT=20", NULL};
    rank_ctx ctx = {.size = 2};
    int pid1, failed = 0;
    static const char garbage[] =
        "GET / HTTP/1.0\r\nHost: x\r\n\r\n"
        "0123456789012345678901234567890123456789012345678901234567890123456789"
        "0123456789012345678901234567890123456789012345678901234567890123456789"
        "0123456789012345678901234567890123456789012345678901234567890123456789"
        "01234567890123456789012345678901234567890123456789"
        "0123456789012345678901234567890123456789012345678901234567890123456789"
        "0123456789012345678901234567890123456789012345678901234567890123456789";
    _Static_assert(sizeof garbage > TETHER__HELLO_SIZE, "garbage shorter than a hello");
    for (int i = 0; env[i]; i++)
        putenv((char *)env[i]);
    harness_ports(2, ctx.ports);
    ctx.hostfile = harness_hostfile(2, 1, ctx.ports);
    ctx.rank = 1;
    pid1 = harness_spawn(&ctx, strays_body);
    int g = harness_connect(ctx.ports[1]);
    CHECK(write(g, garbage, sizeof garbage) == (ssize_t)sizeof garbage, "write garbage");
    wrong_token(ctx.ports[1], 0);
    wrong_token(ctx.ports[1], 1);
    int silent = harness_connect(ctx.ports[1]);
    close(harness_connect(ctx.ports[1]));
    failed |= join_rank0(&ctx, pid1, strays_body);
    /* the garbage sender was dropped: its connection is closed */
    struct pollfd p = {.fd = g, .events = POLLIN};
    char c;
    CHECK(poll(&p, 1, 5000) == 1 && read(g, &c, 1) <= 0, "garbage connection not closed");
    close(g);
    close(silent);
    unlink(ctx.hostfile);
    return failed;
}

/* Rank 1 runs with 64 file descriptors and 200 idle connections on its port: it sheds them (the
 * oldest that said nothing first) instead of failing init with "accept(): Too many open files",
 * and forms the mesh with rank 0. */
static int flood_body(const rank_ctx *ctx)
{
    if (ctx->rank == 1) {
        struct rlimit lim = {.rlim_cur = 64, .rlim_max = 64};
        CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0, "setrlimit");
    }
    return strays_body(ctx);
}

static int run_flood(void)
{
    enum { IDLE = 200 };
    rank_ctx ctx = {.size = 2, .rank = 1};
    int idle[IDLE], failed = 0, pid1;
    setenv("TETHER_JOB_TOKEN", "right-token", 1);
    harness_ports(2, ctx.ports);
    ctx.hostfile = harness_hostfile(2, 1, ctx.ports);
    pid1 = harness_spawn(&ctx, flood_body);
    for (int i = 0; i < IDLE; i++)
        idle[i] = harness_connect(ctx.ports[1]);
    failed |= join_rank0(&ctx, pid1, flood_body);
    for (int i = 0; i < IDLE; i++)
        close(idle[i]);
    unlink(ctx.hostfile);
    return failed;
}

/* Ranks started by hand without TETHER_JOB_TOKEN: a local process that claims rank 0 without a
 * token is refused (it was accepted as rank 0), and the real rank 0, reading the same hostfile,
 * forms the mesh with rank 1. */
static int run_no_token(void)
{
    rank_ctx ctx = {.size = 2, .rank = 1};
    int pid1, failed = 0;
    unsetenv("TETHER_JOB_TOKEN");
    setenv("TETHER_TIMEOUT", "20", 1);
    harness_ports(2, ctx.ports);
    ctx.hostfile = harness_hostfile(2, 1, ctx.ports);
    pid1 = harness_spawn(&ctx, strays_body);
    wrong_token_as(ctx.ports[1], 1, "", NULL);
    failed |= join_rank0(&ctx, pid1, strays_body);
    unlink(ctx.hostfile);
    return failed;
}

/* A replayed handshake: what a sniffer records of a rank's connection (its hello and the proof
 * it makes for the challenge) proves nothing on a new connection, whose challenge carries a fresh
 * nonce. Then the real rank 0 forms the mesh. */
static int run_replay(void)
{
    rank_ctx ctx = {.size = 2, .rank = 1};
    int pid1, failed = 0;
    setenv("TETHER_JOB_TOKEN", "right-token", 1);
    setenv("TETHER_TIMEOUT", "20", 1);
    harness_ports(2, ctx.ports);
    ctx.hostfile = harness_hostfile(2, 1, ctx.ports);
    pid1 = harness_spawn(&ctx, strays_body);
    /* the recording: a hello, the rank's challenge, and the proof rank 0 would answer it with */
    tether__hello h = {.version = TETHER__PROTO_VERSION, .rank = 0, .size = 2, .nlinks = 1};
    tether__config cfg;
    CHECK_OK(tether__config_load(&cfg));
    tether__config_agreed(&cfg, h.settings);
    snprintf(h.backend, sizeof h.backend, "mesh");
    tether__hs_msgs m;
    tether__hello_encode(&h, m[TETHER__HS_HELLO]);
    int fd = harness_connect(ctx.ports[1]);
    CHECK(write(fd, m[TETHER__HS_HELLO], TETHER__HELLO_SIZE) == TETHER__HELLO_SIZE, "write");
    CHECK(read_full(fd, m[TETHER__HS_CHALLENGE]), "no challenge");
    close(fd);
    tether__hs_status_msg(TETHER__HS_OK, m[TETHER__HS_PROOF]);
    tether__hs_prove("right-token", m, TETHER__HS_PROOF);
    /* the replay: the same hello and proof on a new connection, whose challenge differs */
    fd = harness_connect(ctx.ports[1]);
    unsigned char challenge[TETHER__HELLO_SIZE], verdict[TETHER__HELLO_SIZE];
    CHECK(write(fd, m[TETHER__HS_HELLO], TETHER__HELLO_SIZE) == TETHER__HELLO_SIZE, "write");
    CHECK(read_full(fd, challenge), "no challenge");
    CHECK(memcmp(challenge, m[TETHER__HS_CHALLENGE], sizeof challenge), "challenge repeated");
    CHECK(write(fd, m[TETHER__HS_PROOF], TETHER__HELLO_SIZE) == TETHER__HELLO_SIZE, "write");
    CHECK(read_full(fd, verdict) && tether__hello_decode(verdict, &h) == 0 &&
              h.status == TETHER__HS_BAD_TOKEN,
          "a replayed proof was not refused (status %u)", h.status);
    close(fd);
    failed |= join_rank0(&ctx, pid1, strays_body);
    unlink(ctx.hostfile);
    return failed;
}

/* A peer with the job's token announces a message nobody asked for, longer than the rank buffers
 * for it: 8 GiB for a collective (at most twice the largest message posted, at least 1 GiB), 1 TiB
 * for a send (at most half the machine's memory; a 2 GiB send is fine). The rank must not allocate
 * it, and fails at once naming the peer and the length (the fuzzer's frames made it allocate 4-21
 * GB and wait). */
static const char *huge_len_text;

static int huge_frame_body(const rank_ctx *ctx)
{
    tether__ep *ep = harness_open(ctx);
    tether__tag t = {.group = 0, .seq = 1, .step = 0, .sig = 1};
    int x = 0;
    int rc = harness_recv(ep, 0, &x, sizeof x, t);
    CHECK(rc == TETHER_ENET, "got %s: %s", tether_err_name(rc), tether_last_error());
    CHECK_MSG(huge_len_text);
    CHECK_MSG("rank 0");
    tether__mesh_ops.close(ep);
    return 0;
}

static int run_huge_frame(uint32_t seq, uint64_t len, const char *len_text)
{
    rank_ctx ctx = {.size = 2, .rank = 1};
    huge_len_text = len_text;
    setenv("TETHER_JOB_TOKEN", "fault-test", 1);
    setenv("TETHER_TIMEOUT", "5", 1); /* before the fix it waited for the 8 GiB this long */
    harness_ports(2, ctx.ports);
    ctx.hostfile = harness_hostfile(2, 1, ctx.ports);
    int pid = harness_spawn(&ctx, huge_frame_body);
    int fd = harness_fake_peer(ctx.ports[1], 0, 2, "fault-test", HARNESS_OPENING_FRAMES);
    tether__tag t = {.group = 0, .seq = seq, .step = 0, .sig = 1}; /* not the one it waits for */
    harness_send_frame(fd, TETHER__FRAME_DATA, t, len, 0);
    int failed = harness_reap(pid, 1);
    close(fd);
    unlink(ctx.hostfile);
    return failed;
}

/* ---- opening_silent: a peer that formed its link and then fell silent in the middle of opening
 * fails it in TETHER_TIMEOUT, with an error that names the rank and what it did not send ---- */

static const char *silent_missing;

static int silent_body(const rank_ctx *ctx)
{
    (void)ctx;
    tether__config cfg;
    tether__ep *ep = NULL;
    int rank = -1, size = -1;
    CHECK_OK(tether__config_load(&cfg));
    int64_t t0 = harness_now_ms();
    int rc = tether__mesh_ops.open(&cfg, &ep, &rank, &size);
    int64_t took = harness_now_ms() - t0;
    CHECK(rc == TETHER_ETIMEDOUT, "got %s: %s", tether_err_name(rc), tether_last_error());
    CHECK_MSG("rank 0 (127.0.0.1:");
    CHECK_MSG(silent_missing);
    CHECK(took >= 1500 && took < 8000, "failed after %lld ms, TETHER_TIMEOUT=2", (long long)took);
    return 0;
}

/* The fake peer sends the first `frames` frames of opening, then nothing. */
static int run_opening_silent(int frames, const char *missing)
{
    rank_ctx ctx = {.size = 2, .rank = 1};
    silent_missing = missing;
    setenv("TETHER_JOB_TOKEN", "fault-test", 1);
    setenv("TETHER_TIMEOUT", "2", 1);
    harness_ports(2, ctx.ports);
    ctx.hostfile = harness_hostfile(2, 1, ctx.ports);
    int pid = harness_spawn(&ctx, silent_body);
    int fd = harness_fake_peer(ctx.ports[1], 0, 2, "fault-test", frames);
    int failed = harness_reap(pid, 1);
    close(fd);
    unlink(ctx.hostfile);
    return failed;
}

/* ---- lazy_send: a message nobody has posted for costs what has arrived of it, not what its
 * header announced ---- */

#define LAZY_REAL ((size_t)6 << 20)          /* above the blocks kept (4 MiB): grows */
#define LAZY_LIE ((uint64_t)8 << 30)         /* admitted: under half of 16 GiB and more */
#define LAZY_SENT 4096                       /* what the liar sends of it */
#define LAZY_GROWTH_MAX ((uint64_t)64 << 20) /* what the rank may grow meanwhile */

/* This process's VmData (its heap and private mappings) in bytes, from /proc/self/status. */
static uint64_t vm_data(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kib = 0;
    CHECK(f != NULL, "cannot read /proc/self/status");
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmData: %llu kB", &kib) == 1)
            break;
    fclose(f);
    return (uint64_t)kib << 10;
}

/* Until the header of tag from rank 0 has arrived (the probe reads what the socket holds). */
static void lazy_await(tether__ep *ep, tether__tag t)
{
    for (int i = 0; i < 2000; i++) {
        int rc = tether__mesh_ops.probe(ep, 0, t);
        CHECK(rc >= 0, "probe: %s", tether_last_error());
        if (rc == 1)
            return;
        tether__mesh_ops.wait(ep, 10);
    }
    CHECK(0, "the header of step %u never came", t.step);
}

/* Rank 1: the real message (6 MiB: its first half read unclaimed into a growing buffer, the rest
 * after its receive is posted) arrives whole; then a header announcing 8 GiB followed by 4 KiB must
 * not make it allocate 8 GiB (it did, as soon as the header came). */
static int lazy_body(const rank_ctx *ctx)
{
    tether__ep *ep = harness_open(ctx);
    tether__tag real = {.group = 0, .seq = TETHER__TAG_P2P, .step = 1, .sig = 1};
    tether__tag lie = {.group = 0, .seq = TETHER__TAG_P2P, .step = 2, .sig = 1};
    unsigned char *buf = malloc(LAZY_REAL);
    CHECK(buf != NULL, "out of memory");
    lazy_await(ep, real);
    for (int i = 0; i < 10; i++) { /* its first half arrives unclaimed: the buffer grows */
        CHECK(tether__mesh_ops.probe(ep, 0, real) == 1, "probe: %s", tether_last_error());
        tether__mesh_ops.wait(ep, 10);
    }
    CHECK_OK(harness_recv(ep, 0, buf, LAZY_REAL, real));
    CHECK(harness_verify(buf, LAZY_REAL, 5) == 0, "the 6 MiB message arrived wrong");
    free(buf);
    uint64_t before = vm_data();
    lazy_await(ep, lie);
    for (int i = 0; i < 20; i++) { /* what follows the header: read as it comes */
        CHECK(tether__mesh_ops.probe(ep, 0, lie) == 1, "probe: %s", tether_last_error());
        tether__mesh_ops.wait(ep, 10);
    }
    uint64_t grew = vm_data() - before;
    CHECK(grew < LAZY_GROWTH_MAX, "a header announcing %llu bytes made the rank grow %llu bytes",
          (unsigned long long)LAZY_LIE, (unsigned long long)grew);
    tether__mesh_ops.close(ep);
    return 0;
}

static int run_lazy_send(void)
{
    rank_ctx ctx = {.size = 2, .rank = 1};
    setenv("TETHER_JOB_TOKEN", "fault-test", 1);
    harness_ports(2, ctx.ports);
    ctx.hostfile = harness_hostfile(2, 1, ctx.ports);
    int pid = harness_spawn(&ctx, lazy_body);
    int fd = harness_fake_peer(ctx.ports[1], 0, 2, "fault-test", HARNESS_OPENING_FRAMES);
    unsigned char *payload = malloc(LAZY_REAL);
    CHECK(payload != NULL, "out of memory");
    harness_fill(payload, LAZY_REAL, 5);
    tether__tag real = {.group = 0, .seq = TETHER__TAG_P2P, .step = 1, .sig = 1};
    tether__tag lie = {.group = 0, .seq = TETHER__TAG_P2P, .step = 2, .sig = 1};
    harness_send_frame(fd, TETHER__FRAME_DATA, real, LAZY_REAL, 0);
    harness_write_all(fd, payload, LAZY_REAL / 2);
    usleep(300 * 1000); /* the rank posts its receive meanwhile */
    harness_write_all(fd, payload + LAZY_REAL / 2, LAZY_REAL - LAZY_REAL / 2);
    harness_send_frame(fd, TETHER__FRAME_DATA, lie, LAZY_LIE, 0);
    harness_write_all(fd, payload, LAZY_SENT);
    int failed = harness_reap(pid, 1);
    free(payload);
    close(fd);
    unlink(ctx.hostfile);
    return failed;
}

/* Another program holds the port: open fails at once with ENET naming the address and the fix. */
static int run_port_in_use(void)
{
    int ports[2];
    harness_ports(2, ports);
    const char *path = harness_hostfile(2, 1, ports);
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)ports[1]),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 4) == 0,
          "cannot hold the port");
    setenv("TETHER_RANK", "1", 1);
    setenv("TETHER_HOSTFILE", path, 1);
    tether__config cfg;
    tether__ep *ep = NULL;
    int rank, size;
    CHECK_OK(tether__config_load(&cfg));
    int rc = tether__mesh_ops.open(&cfg, &ep, &rank, &size);
    CHECK(rc == TETHER_ENET, "open gave %s", tether_err_name(rc));
    char port[32];
    snprintf(port, sizeof port, "127.0.0.1:%d", ports[1]);
    CHECK_MSG(port);
    CHECK_MSG("already in use");
    CHECK_MSG("--starting-port");
    close(fd);
    unlink(path);
    return 0;
}

/* A rank out of range for the hostfile is a configuration error naming both. */
static int run_bad_rank(void)
{
    int ports[2];
    harness_ports(2, ports);
    const char *path = harness_hostfile(2, 1, ports);
    setenv("TETHER_RANK", "2", 1);
    setenv("TETHER_HOSTFILE", path, 1);
    tether__config cfg;
    tether__ep *ep = NULL;
    int rank, size;
    CHECK_OK(tether__config_load(&cfg));
    int rc = tether__mesh_ops.open(&cfg, &ep, &rank, &size);
    CHECK(rc == TETHER_ECONFIG, "open gave %s", tether_err_name(rc));
    CHECK_MSG("TETHER_RANK=2");
    CHECK_MSG(path);
    unlink(path);
    return 0;
}

/* TETHER_IFACE_PRIORITY is a hard filter: an own address outside it is refused, named. */
static int run_iface_refused(void)
{
    int ports[4];
    harness_ports(4, ports);
    const char *path = harness_hostfile(2, 2, ports);
    setenv("TETHER_RANK", "0", 1);
    setenv("TETHER_HOSTFILE", path, 1);
    setenv("TETHER_IFACE_PRIORITY", "127.0.0.2", 1);
    tether__config cfg;
    tether__ep *ep = NULL;
    int rank, size;
    CHECK_OK(tether__config_load(&cfg));
    int rc = tether__mesh_ops.open(&cfg, &ep, &rank, &size);
    CHECK(rc == TETHER_ECONFIG, "open gave %s", tether_err_name(rc));
    CHECK_MSG("127.0.0.1");
    CHECK_MSG("TETHER_IFACE_PRIORITY");
    unlink(path);
    return 0;
}

int main(int argc, char **argv)
{
    static const char *env[] = {"TETHER_JOB_TOKEN=fault-test", "TETHER_TIMEOUT=20", NULL};
    const char *t = argc > 1 ? argv[1] : "";
    if (!strcmp(t, "mismatch"))
        return harness_run(2, env, mismatch_body);
    if (!strcmp(t, "p2p_mismatch"))
        return harness_run(2, env, p2p_mismatch_body);
    if (!strcmp(t, "p2p_mismatch_ring")) {
        p2p_backend = "ring";
        return harness_run(2, env, p2p_mismatch_body);
    }
    if (!strcmp(t, "signature"))
        return harness_run(2, env, signature_body);
    if (!strcmp(t, "peer_exit"))
        return harness_run(3, env, peer_exit_body);
    if (!strcmp(t, "cma_withdraw")) { /* set: between ranks with rings it starts at 4 MiB */
        static const char *cma_env[] = {"TETHER_JOB_TOKEN=fault-test", "TETHER_TIMEOUT=20",
                                        "TETHER_TCP_CMA_MIN=262144", NULL};
        return harness_run(2, cma_env, cma_withdraw_body);
    }
    if (!strcmp(t, "abort"))
        return harness_run(3, env, abort_body);
    if (!strcmp(t, "strays"))
        return run_strays();
    if (!strcmp(t, "port_in_use"))
        return run_port_in_use();
    if (!strcmp(t, "bad_rank"))
        return run_bad_rank();
    if (!strcmp(t, "iface_refused"))
        return run_iface_refused();
    if (!strcmp(t, "huge_frame"))
        return run_huge_frame(2, (uint64_t)8 << 30, "8589934592 bytes");
    if (!strcmp(t, "huge_send"))
        return run_huge_frame(2 | TETHER__TAG_P2P, (uint64_t)1 << 40, "1099511627776 bytes");
    if (!strcmp(t, "lazy_send"))
        return run_lazy_send();
    if (!strcmp(t, "opening_silent")) /* after the handshake; after every offer but the rings' */
        return run_opening_silent(0, "sent no memory offer or answer within 2 s") ||
               run_opening_silent(HARNESS_OPENING_FRAMES - 1,
                                  "sent no word on whether all its pairs have rings within 2 s");
    if (!strcmp(t, "flood"))
        return run_flood();
    if (!strcmp(t, "no_token"))
        return run_no_token();
    if (!strcmp(t, "replay"))
        return run_replay();
    fprintf(stderr,
            "usage: %s "
            "mismatch|p2p_mismatch|p2p_mismatch_ring|signature|peer_exit|abort|strays|port_in_use|"
            "bad_rank|iface_refused|huge_frame|huge_send|lazy_send|opening_silent|flood|no_token|"
            "replay\n",
            argv[0]);
    return 2;
}
