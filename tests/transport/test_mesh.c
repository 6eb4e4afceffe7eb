/* tests/transport/test_mesh.c - messages between real processes over the mesh backend.
 * Every pair and size, posted and unexpected receives, order, two threads, the coordinator; and a
 * ring's wait that wakes for a message nobody has posted for yet (any_wake). */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "backends/ring/ring.h"
#include "backends/tcp/engine.h"
#include "harness.h"

static const size_t sizes[] = {0, 1, 100, 65536 + 3, (3u << 20) + 7};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static uint32_t seed_of(int from, int to, size_t i)
{
    return (uint32_t)(from * 1000 + to * 100 + (int)i);
}

/* Every rank sends every size to every other rank. Receives of the first half of the peers are
 * posted after a pause, so their messages arrive unexpected; the rest are posted first. */
static int exchange_body(const rank_ctx *ctx)
{
    tether__ep *ep = harness_open(ctx);
    int n = ctx->size, me = ctx->rank, nreq = 0;
    tether__req *reqs[2 * MAX_RANKS * NSIZES];
    unsigned char *sbuf[MAX_RANKS][NSIZES], *rbuf[MAX_RANKS][NSIZES];
    for (int p = 0; p < n; p++)
        for (size_t i = 0; p != me && i < NSIZES; i++) {
            sbuf[p][i] = malloc(sizes[i] + 1);
            rbuf[p][i] = malloc(sizes[i] + 1);
            harness_fill(sbuf[p][i], sizes[i], seed_of(me, p, i));
        }
    for (int late = 0; late < 2; late++) {
        for (int p = 0; p < n; p++)
            for (size_t i = 0; p != me && i < NSIZES; i++) {
                tether__tag t = {.group = 0, .seq = 1, .step = (uint32_t)i, .sig = 42};
                if ((p < n / 2) == late)
                    CHECK_OK(tether__mesh_ops.irecv(ep, p, rbuf[p][i], sizes[i], t, &reqs[nreq++]));
                if (!late)
                    CHECK_OK(tether__mesh_ops.isend(ep, p, sbuf[p][i], sizes[i], t, &reqs[nreq++]));
            }
        if (!late)
            usleep(200 * 1000);
    }
    for (int i = 0; i < nreq; i++)
        CHECK_OK(harness_wait(ep, reqs[i]));
    for (int p = 0; p < n; p++)
        for (size_t i = 0; p != me && i < NSIZES; i++) {
            CHECK(harness_verify(rbuf[p][i], sizes[i], seed_of(p, me, i)) == 0,
                  "from rank %d size %zu", p, sizes[i]);
            free(sbuf[p][i]);
            free(rbuf[p][i]);
        }
    tether__mesh_ops.close(ep);
    return 0;
}

/* Many messages with one tag between a pair arrive in the order sent. */
static int order_body(const rank_ctx *ctx)
{
    tether__ep *ep = harness_open(ctx);
    tether__tag t = {.group = 7, .seq = TETHER__TAG_P2P | 3, .step = 0, .sig = 1};
    uint32_t v[64];
    if (ctx->rank == 0) {
        for (uint32_t i = 0; i < 64; i++) {
            v[i] = i;
            CHECK_OK(harness_send(ep, 1, &v[i], sizeof v[i], t));
        }
    } else {
        usleep(100 * 1000); /* half arrive before their receive */
        for (uint32_t i = 0; i < 64; i++) {
            CHECK_OK(harness_recv(ep, 0, &v[i], sizeof v[i], t));
            CHECK(v[i] == i, "message %u arrived as number %u", i, v[i]);
        }
    }
    /* a last round trip so neither closes while the other still reads */
    CHECK_OK(ctx->rank ? harness_send(ep, 0, v, 4, t) : harness_recv(ep, 1, v, 4, t));
    tether__mesh_ops.close(ep);
    return 0;
}

typedef struct ping_arg {
    tether__ep *ep;
    int rank;
    uint32_t group;
    int rc;
} ping_arg;

/* Ping-pong on one group id; the two threads of a rank use two ids on the same endpoint. */
static void *ping(void *p)
{
    ping_arg *a = p;
    uint64_t x = 0;
    for (uint32_t i = 0; i < 300 && a->rc == TETHER_OK; i++) {
        tether__tag t = {.group = a->group, .seq = i, .step = 0, .sig = a->group};
        int peer = 1 - a->rank;
        if (a->rank == 0) {
            x = i * 10 + a->group;
            a->rc = harness_send(a->ep, peer, &x, sizeof x, t);
            if (a->rc == TETHER_OK)
                a->rc = harness_recv(a->ep, peer, &x, sizeof x, t);
            if (a->rc == TETHER_OK && x != i * 10 + a->group + 1)
                a->rc = TETHER_EINTERNAL;
        } else {
            a->rc = harness_recv(a->ep, peer, &x, sizeof x, t);
            x++;
            if (a->rc == TETHER_OK)
                a->rc = harness_send(a->ep, peer, &x, sizeof x, t);
        }
    }
    return NULL;
}

static int threads_body(const rank_ctx *ctx)
{
    tether__ep *ep = harness_open(ctx);
    pthread_t th[2];
    ping_arg a[2];
    for (int i = 0; i < 2; i++) {
        a[i] = (ping_arg){.ep = ep, .rank = ctx->rank, .group = (uint32_t)i + 1};
        CHECK(pthread_create(&th[i], NULL, ping, &a[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        CHECK(a[i].rc == TETHER_OK, "thread %d: %s", i, tether_err_name(a[i].rc));
    }
    tether__mesh_ops.close(ep);
    return 0;
}

/* No hostfile: TETHER_COORDINATOR, TETHER_RANK, TETHER_SIZE, then a ring of messages. */
static int coordinator_body(const rank_ctx *ctx)
{
    unsetenv("TETHER_HOSTFILE");
    tether__ep *ep = harness_open(ctx);
    int n = ctx->size, me = ctx->rank, got = -1;
    tether__tag t = {.group = 0, .seq = 0, .step = 0, .sig = 5};
    tether__req *r;
    CHECK_OK(tether__mesh_ops.isend(ep, (me + 1) % n, &me, sizeof me, t, &r));
    CHECK_OK(harness_recv(ep, (me + n - 1) % n, &got, sizeof got, t));
    CHECK_OK(harness_wait(ep, r));
    CHECK(got == (me + n - 1) % n, "got %d from the left", got);
    CHECK_OK(harness_send(ep, (me + n - 1) % n, &me, sizeof me, t)); /* and back, before closing */
    CHECK_OK(harness_recv(ep, (me + 1) % n, &got, sizeof got, t));
    tether__mesh_ops.close(ep);
    return 0;
}

static int run_coordinator(void)
{
    static char coord[64];
    int port;
    harness_ports(1, &port);
    snprintf(coord, sizeof coord, "TETHER_COORDINATOR=127.0.0.1:%d", port);
    const char *env[] = {coord, "TETHER_SIZE=4", "TETHER_JOB_TOKEN=coord-test", NULL};
    return harness_run(4, env, coordinator_body);
}

/* Bytes received from peer on all its links so far. */
static uint64_t link_recvd(tether__ep *ep, int peer)
{
    uint64_t sent, recvd, total = 0;
    for (int k = 0; tether__tcp_link_bytes((tether__tcp_ep *)ep, peer, k, &sent, &recvd) == 0; k++)
        total += recvd;
    return total;
}

/* any_wake (a ring of 4, which routes, so a progress thread reads while the program is away):
 * rank 1 probes for rank 0's message, as an any-source receive does, and finds
 * none; the message then arrives while rank 1 is outside the engine's calls, so its progress
 * thread reads it; rank 1's wait() must return at once. It slept out its whole timeout (the
 * arrival of a message nobody had posted for was no event), so an any-source receive on the ring
 * woke up to 10 ms (core's sleep slice) late. */
static int any_wake_body(const rank_ctx *ctx)
{
    tether__config cfg;
    tether__ep *ep = NULL;
    int rank = -1, size = -1, x = 7;
    CHECK_OK(tether__config_load(&cfg));
    CHECK_OK(tether__ring_ops.open(&cfg, &ep, &rank, &size));
    CHECK(rank == ctx->rank && size == ctx->size, "formed rank %d of %d", rank, size);
    tether__tag t = {.group = 0, .seq = TETHER__TAG_P2P, .step = 0, .sig = 1};
    if (rank == 0) {
        usleep(300 * 1000); /* rank 1 has probed, and its progress thread is watching again */
        CHECK_OK(harness_send(ep, 1, &x, sizeof x, t));
        CHECK_OK(harness_recv(ep, 1, &x, sizeof x, t));
    } else if (rank == 1) {
        CHECK(tether__ring_ops.probe(ep, 0, t) == 0, "a message came before it was sent");
        uint64_t before = link_recvd(ep, 0);
        usleep(600 * 1000); /* rank 0 sends meanwhile, and the progress thread reads it */
        CHECK(link_recvd(ep, 0) > before, "nothing came from rank 0 in 600 ms");
        int64_t t0 = harness_now_ms();
        CHECK_OK(tether__ring_ops.wait(ep, 5000));
        int64_t waited = harness_now_ms() - t0;
        CHECK(waited < 1000, "wait() slept %lld ms with a message there to claim",
              (long long)waited);
        CHECK(tether__ring_ops.probe(ep, 0, t) == 1, "the message read is not there to claim");
        CHECK_OK(harness_recv(ep, 0, &x, sizeof x, t));
        CHECK_OK(harness_send(ep, 0, &x, sizeof x, t));
    }
    tether__ring_ops.close(ep);
    return 0;
}

int main(int argc, char **argv)
{
    static const char *token[] = {"TETHER_JOB_TOKEN=mesh-test", "TETHER_TIMEOUT=20", NULL};
    const char *t = argc > 1 ? argv[1] : "";
    if (!strcmp(t, "exchange2"))
        return harness_run(2, token, exchange_body);
    if (!strcmp(t, "exchange4"))
        return harness_run(4, token, exchange_body);
    if (!strcmp(t, "two_addrs")) /* two addresses per rank: one is picked per pair */
        return harness_run_addrs(3, 2, token, exchange_body);
    if (!strcmp(t, "order"))
        return harness_run(2, token, order_body);
    if (!strcmp(t, "threads"))
        return harness_run(2, token, threads_body);
    if (!strcmp(t, "coordinator"))
        return run_coordinator();
    if (!strcmp(t, "any_wake")) {
        static const char *env[] = {"TETHER_JOB_TOKEN=mesh-test", "TETHER_TIMEOUT=20",
                                    "TETHER_HEARTBEAT=10", NULL};
        return harness_run(4, env, any_wake_body); /* 4: the ring runs its progress thread */
    }
    fprintf(stderr, "usage: %s exchange2|exchange4|two_addrs|order|threads|coordinator|any_wake\n",
            argv[0]);
    return 2;
}
