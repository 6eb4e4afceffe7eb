/* tests/transport/test_chunks.c - big messages: cut into many syscalls, striped over links.
 * A small TETHER_TCP_MAX_IO takes the path a >= 2 GiB transfer takes at the 1 GiB cap. */
#include <string.h>
#include <unistd.h>

#include "backends/tcp/engine.h"
#include "core/host.h"
#include "harness.h"

#define BIG ((5u << 20) + 3)

/* Whether this run's ranks read big messages from each other's memory (backends/tcp/cma.h). */
static int from_memory(void)
{
    return strcmp(getenv("TETHER_TCP_CMA_MIN"), "0") != 0;
}

/* The bytes took the way TETHER_TCP_CMA_MIN says: link 0 carried them all, or only descriptors. */
static int check_path(tether__ep *ep, int peer, uint64_t payload)
{
    uint64_t sent, recvd;
    CHECK_OK(tether__tcp_link_bytes((tether__tcp_ep *)ep, peer, 0, &sent, &recvd));
    CHECK(from_memory() ? sent < 4096 : sent >= payload,
          "link 0 sent %llu bytes for %llu of payload", (unsigned long long)sent,
          (unsigned long long)payload);
    return 0;
}

/* Both ranks send BIG to each other at once, one posted early, one late (unexpected), then a
 * zero-length and a small message behind the big one keep their order. */
static int chunks_body(const rank_ctx *ctx)
{
    tether__ep *ep = harness_open(ctx);
    int peer = 1 - ctx->rank;
    unsigned char *s = malloc(BIG), *r1 = malloc(BIG), *r2 = malloc(BIG);
    int small = ctx->rank, got = -1;
    CHECK(s && r1 && r2, "malloc");
    harness_fill(s, BIG, (uint32_t)ctx->rank);
    tether__tag t1 = {.group = 0, .seq = 1, .step = 0, .sig = 3}, t2 = t1, t3 = t1;
    t2.step = 1;
    t3.step = 2;
    tether__req *q[5];
    CHECK_OK(tether__mesh_ops.irecv(ep, peer, r1, BIG, t1, &q[0]));
    CHECK_OK(tether__mesh_ops.isend(ep, peer, s, BIG, t1, &q[1]));
    CHECK_OK(tether__mesh_ops.isend(ep, peer, s, BIG, t2, &q[2]));
    CHECK_OK(tether__mesh_ops.isend(ep, peer, &small, sizeof small, t3, &q[3]));
    CHECK_OK(tether__mesh_ops.isend(ep, peer, NULL, 0, t3, &q[4]));
    for (int i = 0; i < 2; i++)
        CHECK_OK(harness_wait(ep, q[i]));
    usleep(100 * 1000);
    CHECK_OK(harness_recv(ep, peer, r2, BIG, t2));
    CHECK_OK(harness_recv(ep, peer, &got, sizeof got, t3));
    CHECK_OK(harness_recv(ep, peer, NULL, 0, t3));
    for (int i = 2; i < 5; i++)
        CHECK_OK(harness_wait(ep, q[i]));
    CHECK(harness_verify(r1, BIG, (uint32_t)peer) == 0, "first big message");
    CHECK(harness_verify(r2, BIG, (uint32_t)peer) == 0, "second big message");
    CHECK(got == peer, "small message %d", got);
    if (check_path(ep, peer, 2 * (uint64_t)BIG))
        return 1;
    free(s);
    free(r1);
    free(r2);
    tether__mesh_ops.close(ep);
    return 0;
}

/* Both ranks send a message far larger than the socket buffers and wait for the send before
 * posting the receive (a blocking send, then a receive). Bytes nobody asked for stay in the socket
 * at first, so each send can only finish because a rank stuck sending reads its peer's bytes after
 * all; the exchange must complete, not hang until the timeout. */
static int crossed_body(const rank_ctx *ctx)
{
    const size_t len = (size_t)48 << 20;
    tether__ep *ep = harness_open(ctx);
    int peer = 1 - ctx->rank;
    unsigned char *s = malloc(len), *r = malloc(len);
    CHECK(s && r, "malloc");
    harness_fill(s, len, (uint32_t)ctx->rank + 7);
    tether__tag t = {.group = 0, .seq = 2, .step = 0, .sig = 5};
    CHECK_OK(harness_send(ep, peer, s, len, t));
    CHECK_OK(harness_recv(ep, peer, r, len, t));
    CHECK(harness_verify(r, len, (uint32_t)peer + 7) == 0, "crossed message");
    if (check_path(ep, peer, len))
        return 1;
    free(s);
    free(r);
    tether__mesh_ops.close(ep);
    return 0;
}

/* Two links between the ranks, formed by the shared set-up as the ring backend will: a big
 * message is striped over both, small ones go on link 0, order holds across them. */
static int stripes_body(const rank_ctx *ctx)
{
    int me = ctx->rank, peer = 1 - me, port, lfd;
    tether__config cfg;
    tether__net_plan plan;
    tether__hostaddr a = {"127.0.0.1", ctx->ports[peer]};
    CHECK_OK(tether__config_load(&cfg));
    CHECK_OK(tether__net_plan_init(&plan, me, 2, &cfg));
    CHECK_OK(tether__net_plan_add_addr(&plan, peer, &a));
    if (me == 0)
        plan.out_links[peer] = 2;
    else
        plan.in_links[peer] = 2;
    CHECK_OK(tether__net_listen("127.0.0.1", ctx->ports[me], &lfd, &port));
    plan.nlisten = 1;
    plan.listen_fds = &lfd;
    tether__net_links links;
    tether__tcp_ep *ep;
    CHECK_OK(tether__net_setup(&plan, &links));
    close(lfd);
    tether__net_plan_free(&plan);
    CHECK(links.nlinks[peer] == 2, "%d links", links.nlinks[peer]);
    CHECK_OK(tether__tcp_ep_create(&links, me, "test", &ep));
    tether__net_links_free(&links);

    size_t big = (8u << 20) + 4097;
    unsigned char *buf = malloc(big);
    int v[3] = {10, 11, 12};
    tether__tag tb = {.group = 0, .seq = 1, .step = 0, .sig = 9}, ts = tb;
    ts.step = 1;
    tether__req *r[4];
    int done;
    if (me == 0) {
        harness_fill(buf, big, 99);
        CHECK_OK(tether__tcp_isend((tether__ep *)ep, peer, &v[0], sizeof v[0], ts, &r[0]));
        CHECK_OK(tether__tcp_isend((tether__ep *)ep, peer, buf, big, tb, &r[1]));
        CHECK_OK(tether__tcp_isend((tether__ep *)ep, peer, &v[1], sizeof v[1], ts, &r[2]));
        CHECK_OK(tether__tcp_isend((tether__ep *)ep, peer, &v[2], sizeof v[2], ts, &r[3]));
    } else {
        usleep(50 * 1000); /* the first small one is unexpected; the big one may be either */
        for (int i = 0; i < 3; i++)
            CHECK_OK(tether__tcp_irecv((tether__ep *)ep, peer, &v[i], sizeof v[i], ts, &r[i]));
        CHECK_OK(tether__tcp_irecv((tether__ep *)ep, peer, buf, big, tb, &r[3]));
    }
    for (int i = 0; i < 4; i++)
        for (done = 0; !done;) {
            CHECK_OK(tether__tcp_test((tether__ep *)ep, r[i], &done));
            if (!done)
                CHECK_OK(tether__tcp_wait((tether__ep *)ep, 1000));
        }
    if (me == 1) {
        CHECK(v[0] == 10 && v[1] == 11 && v[2] == 12, "order: %d %d %d", v[0], v[1], v[2]);
        CHECK(harness_verify(buf, big, 99) == 0, "striped message");
    }
    uint64_t sent[2], recvd[2];
    for (int k = 0; k < 2; k++)
        CHECK_OK(tether__tcp_link_bytes(ep, peer, k, &sent[k], &recvd[k]));
    if (from_memory()) {
        /* read from the sender's memory, a stripe per link: the sockets carried descriptors */
        CHECK(sent[0] < 4096 && sent[1] < 4096, "links sent %llu and %llu bytes",
              (unsigned long long)sent[0], (unsigned long long)sent[1]);
        uint64_t *read = me == 0 ? sent : recvd;
        if (me == 1) /* the reader counts what it copied on the link of each stripe */
            CHECK(read[0] > big / 2 - 8192 && read[1] > big / 2 - 8192,
                  "stripes of %llu and %llu bytes", (unsigned long long)read[0],
                  (unsigned long long)read[1]);
    } else {
        uint64_t *moved = me == 0 ? sent : recvd;
        /* each link carried about half of the big message */
        CHECK(moved[0] > big / 2 - 8192 && moved[1] > big / 2 - 8192,
              "links carried %llu and %llu bytes", (unsigned long long)moved[0],
              (unsigned long long)moved[1]);
    }
    /* a last round trip so neither closes while the other still reads */
    tether__req *fin;
    CHECK_OK(me ? tether__tcp_isend((tether__ep *)ep, peer, v, 4, tb, &fin)
                : tether__tcp_irecv((tether__ep *)ep, peer, v, 4, tb, &fin));
    for (done = 0; !done;) {
        CHECK_OK(tether__tcp_test((tether__ep *)ep, fin, &done));
        if (!done)
            CHECK_OK(tether__tcp_wait((tether__ep *)ep, 1000));
    }
    free(buf);
    tether__tcp_close(ep);
    return 0;
}

/* copy_path: 3 ranks of one host with rings (Linux, TETHER_TCP_CMA_MIN unset). A 2 MiB message
 * marked as only copied (TETHER__STEP_COPY) goes by descriptor where the ranks outnumber the
 * host's CPUs, through the rings where each has a CPU of its own; an unmarked one of that size
 * (a reduction's, under 4 MiB) through the rings either way (backends/tcp/engine_impl.h). The
 * third rank only makes the host crowded where it has 2 CPUs. */
#define COPY_LEN ((size_t)2 << 20)

static uint64_t sent_to(tether__ep *ep, int peer)
{
    uint64_t sent, recvd;
    CHECK_OK(tether__tcp_link_bytes((tether__tcp_ep *)ep, peer, 0, &sent, &recvd));
    return sent;
}

static int copy_path_body(const rank_ctx *ctx)
{
    tether__ep *ep = harness_open(ctx);
    tether__tag plain = {.group = 0, .seq = 1, .step = 0, .sig = 5}, copy = plain, fin = plain;
    copy.step = TETHER__STEP_COPY;
    fin.step = 1;
    unsigned char *b = malloc(COPY_LEN);
    CHECK(b != NULL, "malloc");
    int crowded = tether__host_crowded(ctx->size);
    if (ctx->rank == 0) {
        harness_fill(b, COPY_LEN, 9);
        uint64_t before = sent_to(ep, 1);
        CHECK_OK(harness_send(ep, 1, b, COPY_LEN, copy));
        uint64_t marked = sent_to(ep, 1) - before;
        CHECK(crowded ? marked < 4096 : marked >= COPY_LEN,
              "%s host: a marked 2 MiB message put %llu bytes on the link",
              crowded ? "a crowded" : "an uncrowded", (unsigned long long)marked);
        before = sent_to(ep, 1);
        CHECK_OK(harness_send(ep, 1, b, COPY_LEN, plain));
        uint64_t unmarked = sent_to(ep, 1) - before;
        CHECK(unmarked >= COPY_LEN, "an unmarked 2 MiB message put %llu bytes on the link",
              (unsigned long long)unmarked);
    } else if (ctx->rank == 1) {
        CHECK_OK(harness_recv(ep, 0, b, COPY_LEN, copy));
        CHECK(harness_verify(b, COPY_LEN, 9) == 0, "the marked message arrived wrong");
        memset(b, 0, COPY_LEN);
        CHECK_OK(harness_recv(ep, 0, b, COPY_LEN, plain));
        CHECK(harness_verify(b, COPY_LEN, 9) == 0, "the unmarked message arrived wrong");
    }
    /* none closes before the exchange is over */
    int x = 0;
    if (ctx->rank == 1) {
        CHECK_OK(harness_send(ep, 0, &x, sizeof x, fin));
        CHECK_OK(harness_send(ep, 2, &x, sizeof x, fin));
    } else {
        CHECK_OK(harness_recv(ep, 1, &x, sizeof x, fin));
    }
    free(b);
    tether__mesh_ops.close(ep);
    return 0;
}

int main(int argc, char **argv)
{
    /* 4 KiB + 3 per syscall: a 5 MiB message takes over a thousand partial writes and reads,
     * exercising the same resumption a 2 GiB message does at the 1 GiB cap */
    static const char *env[] = {"TETHER_JOB_TOKEN=chunk-test", "TETHER_TIMEOUT=20",
                                "TETHER_TCP_MAX_IO=4099", "TETHER_TCP_CMA_MIN=0", NULL};
    const char *t = argc > 1 ? argv[1] : "";
    if (!strncmp(t, "cma_", 4)) { /* the same between ranks that read each other's memory */
        env[3] = "TETHER_TCP_CMA_MIN=65536";
        t += 4;
    }
    if (!strcmp(t, "copy_path")) {
        static const char *copy_env[] = {"TETHER_JOB_TOKEN=chunk-test", "TETHER_TIMEOUT=20", NULL};
        return harness_run(3, copy_env, copy_path_body);
    }
    if (!strcmp(t, "chunks"))
        return harness_run(2, env, chunks_body);
    if (!strcmp(t, "stripes"))
        return harness_run(2, env + 2, stripes_body);
    if (!strcmp(t, "crossed"))
        return harness_run(2, env + 3, crossed_body);
    fprintf(stderr, "usage: %s [cma_]chunks|stripes|crossed|copy_path\n", argv[0]);
    return 2;
}
