/* test_procs.c - the emulator between two processes: large messages, peer death, and the symbols a
 * dlopen sees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "test_support.h"

static const char *const env_two[] = {"SOFTVERBS_DEVICES=rdma_en2:10.0.2.1,rdma_en3:10.0.3.1",
                                      NULL};
static const char *const env_apple[] = {"SOFTVERBS_DEVICES=rdma_en2:10.0.2.1,rdma_en3:10.0.3.1",
                                        "SOFTVERBS_PROFILE=apple", NULL};

#define BIG (1u << 20)

/* What one side tells the other over a pipe, as the TCP side channel would. */
typedef struct sv_addr {
    uint32_t qpn;
    union ibv_gid gid;
} sv_addr;

typedef struct sv_pipes {
    int to_peer, from_peer;
} sv_pipes;

/* Fork the peer; each side gets its ends of two pipes. Returns the peer's pid in the parent, 0 in
 * it. */
static pid_t fork_peer(sv_pipes *mine)
{
    int down[2], up[2];
    pid_t pid;
    CHECK(pipe(down) == 0 && pipe(up) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the scenario */
    *mine = pid ? (sv_pipes){down[1], up[0]} : (sv_pipes){up[1], down[0]};
    close(pid ? down[0] : down[1]);
    close(pid ? up[1] : up[0]);
    return pid;
}

static void say(const sv_pipes *p, const void *buf, size_t len)
{
    CHECK(write(p->to_peer, buf, len) == (ssize_t)len);
}

static void hear(const sv_pipes *p, void *buf, size_t len)
{
    CHECK(read(p->from_peer, buf, len) == (ssize_t)len);
}

/* Open device dev, trade addresses, connect. */
static void meet(sv_ep *e, int dev, enum ibv_qp_type type, const sv_pipes *p)
{
    sv_addr mine, peer;
    sv_ep_open(e, dev, type, 64, 2 * BIG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    mine = (sv_addr){.qpn = e->qp->qp_num, .gid = e->gid};
    say(p, &mine, sizeof mine);
    hear(p, &peer, sizeof peer);
    CHECK(sv_ep_connect(e, peer.qpn, &peer.gid) == 0);
}

static void expect_wc(sv_ep *e, enum ibv_wc_status st, uint64_t wr_id)
{
    struct ibv_wc wc;
    CHECK(sv_poll(e->cq, &wc, 5000) == 1);
    if (wc.status != st)
        fprintf(stderr, "completion %s, expected %s\n", ibv_wc_status_str(wc.status),
                ibv_wc_status_str(st));
    CHECK(wc.status == st && wc.wr_id == wr_id);
}

static int reap(pid_t pid)
{
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

/* 1 MiB + 3 bytes out, verified by the peer, which answers after posting for our reply. */
static int big_message(enum ibv_qp_type type)
{
    sv_pipes p;
    pid_t pid = fork_peer(&p);
    sv_ep e;
    char ready = 'r';
    meet(&e, pid ? 0 : 1, type, &p);
    if (pid == 0) {
        CHECK(sv_recv(&e, 1, 0, 2 * BIG) == 0);
        say(&p, &ready, 1);
        expect_wc(&e, IBV_WC_SUCCESS, 1);
        for (size_t i = 0; i < BIG + 3; i++)
            CHECK(e.buf[i] == (unsigned char)(i * 31 + 7));
        hear(&p, &ready, 1);
        memcpy(e.buf, "fine", 4);
        CHECK(sv_send(&e, IBV_WR_SEND, 2, 0, 4, IBV_SEND_SIGNALED, 0, 0) == 0);
        expect_wc(&e, IBV_WC_SUCCESS, 2);
        sv_ep_close(&e);
        _exit(0);
    }
    for (size_t i = 0; i < BIG + 3; i++)
        e.buf[i] = (unsigned char)(i * 31 + 7);
    CHECK(sv_recv(&e, 3, BIG + 64, 64) == 0);
    hear(&p, &ready, 1);
    CHECK(sv_send(&e, IBV_WR_SEND, 4, 0, BIG + 3, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_wc(&e, IBV_WC_SUCCESS, 4);
    say(&p, &ready, 1);
    expect_wc(&e, IBV_WC_SUCCESS, 3);
    CHECK(!memcmp(e.buf + BIG + 64, "fine", 4));
    CHECK(reap(pid) == 0);
    sv_ep_close(&e);
    return 0;
}

static int s_big_uc(void)
{
    return big_message(IBV_QPT_UC);
}

static int s_big_rc(void)
{
    return big_message(IBV_QPT_RC);
}

static void test_big_message(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_apple, s_big_uc), 0);
    assert_int_equal(sv_run(env_two, s_big_rc), 0);
}

enum { DIE_AFTER_FIRST, DIE_DURING_RNR, DIE_BEFORE_FIRST };

/* The peer connects, maybe takes one message, then waits to be killed. */
static void doomed_peer(enum ibv_qp_type type, const sv_pipes *p, int when)
{
    sv_ep e;
    char ready = 'r';
    meet(&e, 1, type, p);
    if (when == DIE_AFTER_FIRST) {
        CHECK(sv_recv(&e, 1, 0, 64) == 0);
        say(p, &ready, 1);
        expect_wc(&e, IBV_WC_SUCCESS, 1);
    }
    say(p, &ready, 1);
    pause();
    _exit(0);
}

/* After the peer dies, our send fails with IBV_WC_RETRY_EXC_ERR (a message to a peer that was never
 * reached is silently lost on UC, as hardware would). */
static int peer_dies(enum ibv_qp_type type, int when)
{
    sv_pipes p;
    pid_t pid = fork_peer(&p);
    sv_ep e;
    char ready;
    int status;
    if (pid == 0)
        doomed_peer(type, &p, when);
    meet(&e, 0, type, &p);
    if (when == DIE_AFTER_FIRST) {
        hear(&p, &ready, 1);
        CHECK(sv_send(&e, IBV_WR_SEND, 1, 0, 8, IBV_SEND_SIGNALED, 0, 0) == 0);
        expect_wc(&e, IBV_WC_SUCCESS, 1);
    }
    hear(&p, &ready, 1);
    if (when == DIE_DURING_RNR) { /* no RECV there: RC keeps retrying until the peer is gone */
        struct ibv_wc wc;
        CHECK(sv_send(&e, IBV_WR_SEND, 2, 0, 8, IBV_SEND_SIGNALED, 0, 0) == 0);
        CHECK(sv_poll(e.cq, &wc, 50) == 0);
    }
    kill(pid, SIGKILL);
    CHECK(waitpid(pid, &status, 0) == pid);
    if (when != DIE_DURING_RNR)
        CHECK(sv_send(&e, IBV_WR_SEND, 2, 0, 8, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_wc(
        &e, when == DIE_BEFORE_FIRST && type == IBV_QPT_UC ? IBV_WC_SUCCESS : IBV_WC_RETRY_EXC_ERR,
        2);
    sv_ep_close(&e);
    return 0;
}

static int s_uc_dies_after_first(void)
{
    return peer_dies(IBV_QPT_UC, DIE_AFTER_FIRST);
}

static int s_rc_dies_after_first(void)
{
    return peer_dies(IBV_QPT_RC, DIE_AFTER_FIRST);
}

static int s_rc_dies_during_rnr(void)
{
    return peer_dies(IBV_QPT_RC, DIE_DURING_RNR);
}

static int s_uc_dies_before_first(void)
{
    return peer_dies(IBV_QPT_UC, DIE_BEFORE_FIRST);
}

static int s_rc_dies_before_first(void)
{
    return peer_dies(IBV_QPT_RC, DIE_BEFORE_FIRST);
}

static void test_peer_death(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_two, s_uc_dies_after_first), 0);
    assert_int_equal(sv_run(env_two, s_rc_dies_after_first), 0);
    assert_int_equal(sv_run(env_two, s_rc_dies_during_rnr), 0);
    assert_int_equal(sv_run(env_two, s_uc_dies_before_first), 0);
    assert_int_equal(sv_run(env_two, s_rc_dies_before_first), 0);
}

/* What the RDMA backend does: dlopen, dlsym each name, reach the inline verbs through the ops. */
static int s_dlopen(void)
{
    static const char *const names[] = {"ibv_get_device_list",
                                        "ibv_free_device_list",
                                        "ibv_get_device_name",
                                        "ibv_open_device",
                                        "ibv_close_device",
                                        "ibv_query_device",
                                        "ibv_query_port",
                                        "ibv_query_gid",
                                        "ibv_alloc_pd",
                                        "ibv_dealloc_pd",
                                        "ibv_reg_mr",
                                        "ibv_reg_mr_iova2",
                                        "ibv_dereg_mr",
                                        "ibv_create_cq",
                                        "ibv_destroy_cq",
                                        "ibv_create_comp_channel",
                                        "ibv_destroy_comp_channel",
                                        "ibv_get_cq_event",
                                        "ibv_ack_cq_events",
                                        "ibv_create_qp",
                                        "ibv_modify_qp",
                                        "ibv_query_qp",
                                        "ibv_destroy_qp",
                                        "ibv_wc_status_str"};
    void *lib = dlopen(SOFTVERBS_LIB, RTLD_NOW | RTLD_LOCAL);
    struct ibv_device **(*get_list)(int *);
    struct ibv_context *(*open_dev)(struct ibv_device *);
    struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int);
    struct ibv_device **list;
    struct ibv_context *ctx;
    struct ibv_cq *cq;
    struct ibv_wc wc;
    CHECK(lib != NULL);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!dlsym(lib, names[i])) {
            fprintf(stderr, "%s is not exported\n", names[i]);
            return 1;
        }
    *(void **)&get_list = dlsym(lib, "ibv_get_device_list");
    *(void **)&open_dev = dlsym(lib, "ibv_open_device");
    *(void **)&create_cq = dlsym(lib, "ibv_create_cq");
    CHECK((list = get_list(NULL)) != NULL && (ctx = open_dev(list[0])) != NULL);
    CHECK((cq = create_cq(ctx, 4, NULL, NULL, 0)) != NULL);
    CHECK(ctx->ops.poll_cq && ctx->ops.post_send && ctx->ops.post_recv && ctx->ops.req_notify_cq);
    CHECK(ibv_poll_cq(cq, 1, &wc) == 0);
    CHECK(ibv_req_notify_cq(cq, 0) == EINVAL); /* no channel to notify */
    CHECK(ibv_destroy_cq(cq) == 0 && ibv_close_device(ctx) == 0);
    ibv_free_device_list(list);
    return 0;
}

static void test_dlopen(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_two, s_dlopen), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_big_message),
        cmocka_unit_test(test_peer_death),
        cmocka_unit_test(test_dlopen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
