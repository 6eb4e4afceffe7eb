/* tests/transport/harness.c - forked ranks, loopback ports and hostfiles for transport tests. */
#include "harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/net/frame.h"
#include "backends/net/handshake.h"
#include "tests/support/handshake_client.h"

#define RANK_LIMIT_S 60
#define WAIT_LIMIT_MS 20000

void harness_ports(int n, int *ports)
{
    int fds[MAX_RANKS * 4];
    CHECK(n <= MAX_RANKS * 4, "too many ports");
    for (int i = 0; i < n; i++) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof a;
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(fds[i] >= 0 && bind(fds[i], (struct sockaddr *)&a, len) == 0 &&
                  getsockname(fds[i], (struct sockaddr *)&a, &len) == 0,
              "cannot reserve a loopback port");
        ports[i] = ntohs(a.sin_port);
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
}

const char *harness_hostfile(int n, int naddrs, const int *ports)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/tether-transport-%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    fputs("[", f);
    for (int r = 0; r < n; r++) {
        fprintf(f, "%s[\"127.0.0.1:%d\"", r ? ", " : "", ports[r]);
        if (naddrs > 1)
            fprintf(f, ", \"127.0.0.2:%d\"", ports[n + r]);
        fputs("]", f);
    }
    fputs("]\n", f);
    fclose(f);
    return path;
}

int harness_spawn(const rank_ctx *ctx, int (*body)(const rank_ctx *ctx))
{
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork failed");
    if (pid > 0)
        return (int)pid;
    char rank[16];
    snprintf(rank, sizeof rank, "%d", ctx->rank);
    setenv("TETHER_RANK", rank, 1);
    if (ctx->hostfile)
        setenv("TETHER_HOSTFILE", ctx->hostfile, 1);
    alarm(RANK_LIMIT_S); /* a hung rank dies rather than stalling the test */
    int rc = body(ctx);
    fflush(NULL);
    _exit(rc == 0 ? 0 : 1);
}

int harness_reap(int pid, int rank)
{
    int status;
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFSIGNALED(status))
        fprintf(stderr, "rank %d: killed by signal %d\n", rank, WTERMSIG(status));
    else
        fprintf(stderr, "rank %d: exit status %d\n", rank, WEXITSTATUS(status));
    return 1;
}

int harness_run(int n, const char *const *extra_env, int (*body)(const rank_ctx *ctx))
{
    return harness_run_addrs(n, 1, extra_env, body);
}

int harness_run_addrs(int n, int naddrs, const char *const *extra_env,
                      int (*body)(const rank_ctx *ctx))
{
    rank_ctx ctx = {.size = n};
    int pids[MAX_RANKS], failed = 0;
    CHECK(n <= MAX_RANKS, "at most %d ranks", MAX_RANKS);
    for (; extra_env && *extra_env; extra_env++)
        CHECK(putenv((char *)*extra_env) == 0, "putenv");
    harness_ports(n * naddrs, ctx.ports);
    ctx.hostfile = harness_hostfile(n, naddrs, ctx.ports);
    for (int r = 0; r < n; r++) {
        ctx.rank = r;
        pids[r] = harness_spawn(&ctx, body);
    }
    for (int r = 0; r < n; r++)
        failed |= harness_reap(pids[r], r);
    unlink(ctx.hostfile);
    return failed;
}

tether__ep *harness_open(const rank_ctx *ctx)
{
    tether__config cfg;
    tether__ep *ep = NULL;
    int rank = -1, size = -1;
    CHECK_OK(tether__config_load(&cfg));
    CHECK_OK(tether__mesh_ops.open(&cfg, &ep, &rank, &size));
    CHECK(rank == ctx->rank && size == ctx->size, "formed rank %d of %d, expected %d of %d", rank,
          size, ctx->rank, ctx->size);
    return ep;
}

int64_t harness_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int harness_wait(tether__ep *ep, tether__req *r)
{
    int64_t deadline = harness_now_ms() + WAIT_LIMIT_MS;
    for (;;) {
        int done = 0;
        int rc = tether__mesh_ops.test(ep, r, &done);
        if (rc < 0 || done)
            return rc;
        if (harness_now_ms() > deadline)
            return TETHER_ETIMEDOUT;
        rc = tether__mesh_ops.wait(ep, 100);
        if (rc < 0) {
            tether__mesh_ops.test(ep, r, &done); /* releases r with the sticky error */
            return rc;
        }
    }
}

int harness_send(tether__ep *ep, int peer, const void *buf, size_t len, tether__tag tag)
{
    tether__req *r;
    int rc = tether__mesh_ops.isend(ep, peer, buf, len, tag, &r);
    return rc < 0 ? rc : harness_wait(ep, r);
}

int harness_recv(tether__ep *ep, int peer, void *buf, size_t len, tether__tag tag)
{
    tether__req *r;
    int rc = tether__mesh_ops.irecv(ep, peer, buf, len, tag, &r);
    return rc < 0 ? rc : harness_wait(ep, r);
}

static unsigned char pattern(size_t i, uint32_t seed)
{
    uint32_t x = (uint32_t)i * 2654435761u ^ seed * 40503u;
    return (unsigned char)(x >> 13 ^ x);
}

void harness_fill(unsigned char *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = pattern(i, seed);
}

int harness_verify(const unsigned char *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++)
        if (buf[i] != pattern(i, seed)) {
            fprintf(stderr, "byte %zu of %zu differs (seed %u)\n", i, len, seed);
            return -1;
        }
    return 0;
}

int harness_connect(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int i = 0; i < 500; i++) { /* the rank may not listen yet */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(fd >= 0, "socket");
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            return fd;
        close(fd);
        usleep(10 * 1000);
    }
    CHECK(0, "cannot connect to port %d", port);
    return -1;
}

void harness_write_all(int fd, const void *buf, size_t len)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, (const char *)buf + done, len - done);
        CHECK(n > 0, "write to a rank");
        done += (size_t)n;
    }
}

void harness_send_frame(int fd, uint32_t type, tether__tag tag, uint64_t len, int32_t code)
{
    unsigned char b[TETHER__FRAME_SIZE];
    tether__frame f = {.tag = tag, .len = len, .type = type, .code = code};
    tether__frame_encode(&f, b);
    harness_write_all(fd, b, sizeof b);
}

int harness_fake_peer(int port, int rank, int size, const char *token, int frames)
{
    CHECK(rank == 0, "the fake peer offers the shared ring, as the lower rank: rank 0 only");
    tether__test_hs hs = {.rank = rank, .size = size, .token = token};
    int fd = harness_connect(port);
    int status = tether__test_handshake(fd, &hs);
    CHECK(status == TETHER__HS_OK && hs.challenge_proved, "handshake refused: %d", status);
    static const uint32_t opening[HARNESS_OPENING_FRAMES] = {
        TETHER__FRAME_CMA_OFFER,  /* empty: not on this host */
        TETHER__FRAME_CMA_ANSWER, /* no to the rank's offer */
        TETHER__FRAME_SHM_OFFER,  /* empty: no shared ring */
        TETHER__FRAME_RINGS_ALL,  /* code 0: so not every pair has one */
    };
    tether__tag none = {0};
    for (int i = 0; i < frames && i < HARNESS_OPENING_FRAMES; i++)
        harness_send_frame(fd, opening[i], none, 0, 0);
    return fd;
}
