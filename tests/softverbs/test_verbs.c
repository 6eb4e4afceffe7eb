/* test_verbs.c - the emulator against the verbs semantics it claims, two QPs of one process per
 * scenario. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <poll.h>

#include "test_support.h"

#define TWO_DEVICES "SOFTVERBS_DEVICES=rdma_en2:10.0.2.1,rdma_en3:10.0.3.1"
static const char *const env_linux[] = {TWO_DEVICES, NULL};
static const char *const env_apple[] = {TWO_DEVICES, "SOFTVERBS_PROFILE=apple", NULL};

static void expect_wc(sv_ep *e, enum ibv_wc_status st, uint64_t wr_id)
{
    struct ibv_wc wc;
    CHECK(sv_poll(e->cq, &wc, 3000) == 1);
    if (wc.status != st || wc.wr_id != wr_id)
        fprintf(stderr, "completion: status %s wr_id %llu, expected %s %llu\n",
                ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id, ibv_wc_status_str(st),
                (unsigned long long)wr_id);
    CHECK(wc.status == st && wc.wr_id == wr_id);
}

static void expect_none(sv_ep *e, int ms)
{
    struct ibv_wc wc;
    CHECK(sv_poll(e->cq, &wc, ms) == 0);
}

static enum ibv_qp_state qp_state(sv_ep *e)
{
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;
    CHECK(ibv_query_qp(e->qp, &a, IBV_QP_STATE, &ia) == 0);
    return a.qp_state;
}

/* ---- devices ---- */

static int s_devices(void)
{
    static const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 7, 1};
    struct ibv_port_attr pa;
    union ibv_gid g;
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_context *ctx;
    CHECK(list && n == 3 && list[3] == NULL);
    CHECK(!strcmp(ibv_get_device_name(list[0]), "rdma_en2"));
    CHECK(!strcmp(ibv_get_device_name(list[2]), "rdma_en4"));
    CHECK((ctx = ibv_open_device(list[0])) != NULL);
    memset(&pa, 0, sizeof pa);
    CHECK(ibv_query_port(ctx, 1, &pa) == 0);
    CHECK(pa.state == IBV_PORT_ACTIVE && pa.link_layer == IBV_LINK_LAYER_ETHERNET);
    CHECK(ibv_query_port(ctx, 2, &pa) == EINVAL);
    CHECK(ibv_query_gid(ctx, 1, 3, &g) == 0 && !memcmp(g.raw, mapped, 16)); /* %r = 7 */
    CHECK(ibv_query_gid(ctx, 1, 0, &g) == 0 && g.raw[0] == 0xfe && g.raw[1] == 0x80);
    CHECK(ibv_query_gid(ctx, 1, 8, &g) == -1);
    CHECK(ibv_close_device(ctx) == 0);
    /* No address: only the link-local GID, as before the interface is configured. */
    CHECK((ctx = ibv_open_device(list[2])) != NULL);
    for (int i = 1; i < pa.gid_tbl_len; i++)
        CHECK(ibv_query_gid(ctx, 1, i, &g) == 0 && g.raw[10] == 0 && g.raw[11] == 0);
    CHECK(ibv_close_device(ctx) == 0);
    ibv_free_device_list(list);
    return 0;
}

static void test_devices(void **state)
{
    static const char *const env[] = {
        "SOFTVERBS_DEVICES=rdma_en2:10.0.%r.1,rdma_en3:10.0.3.1,rdma_en4", "SOFTVERBS_GID_INDEX=3",
        "SOFTVERBS_RANK=7", NULL};
    (void)state;
    assert_int_equal(sv_run(env, s_devices), 0);
}

static int s_no_devices(void)
{
    int n = -1;
    struct ibv_device **list = ibv_get_device_list(&n);
    CHECK(list && n == 0 && list[0] == NULL);
    ibv_free_device_list(list);
    return 0;
}

static int s_bad_devices(void)
{
    int n = -1;
    CHECK(ibv_get_device_list(&n) == NULL && errno == EINVAL && n == 0);
    return 0;
}

static void test_device_env(void **state)
{
    static const char *const none[] = {"SOFTVERBS_DEVICES=", NULL};
    static const char *const bad[] = {"SOFTVERBS_DEVICES=rdma_en2:10.0.300.1", NULL};
    static const char *const bad_profile[] = {TWO_DEVICES, "SOFTVERBS_PROFILE=mac", NULL};
    (void)state;
    assert_int_equal(sv_run(none, s_no_devices), 0);
    assert_int_equal(sv_run(bad, s_bad_devices), 0);
    assert_int_equal(sv_run(bad_profile, s_bad_devices), 0);
}

/* ---- QP state machine ---- */

static int modify(sv_ep *e, struct ibv_qp_attr *a, int mask)
{
    return ibv_modify_qp(e->qp, a, mask);
}

static void fill_rtr(sv_ep *e, const sv_ep *peer, struct ibv_qp_attr *a)
{
    memset(a, 0, sizeof *a);
    a->qp_state = IBV_QPS_RTR;
    a->path_mtu = IBV_MTU_1024;
    a->dest_qp_num = peer->qp->qp_num;
    a->ah_attr.is_global = 1;
    a->ah_attr.port_num = 1;
    a->ah_attr.grh.dgid = peer->gid;
    a->ah_attr.grh.sgid_index = (uint8_t)e->gid_index;
}

static int s_state_machine(void)
{
    const int init_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
    const int rtr_uc = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    const int rtr_rc = rtr_uc | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1};
    sv_ep uc, rc;
    sv_ep_open(&uc, 0, IBV_QPT_UC, 16, 4096, IBV_ACCESS_LOCAL_WRITE);
    sv_ep_open(&rc, 1, IBV_QPT_RC, 16, 4096, IBV_ACCESS_LOCAL_WRITE);
    CHECK(sv_recv(&uc, 1, 0, 64) == EINVAL); /* RESET takes no receives */
    CHECK(modify(&uc, &a, init_mask & ~IBV_QP_ACCESS_FLAGS) == EINVAL);
    CHECK(modify(&uc, &a, init_mask | IBV_QP_AV) == EINVAL);
    fill_rtr(&uc, &rc, &a);
    CHECK(modify(&uc, &a, rtr_uc) == EINVAL); /* RESET -> RTR skips INIT */
    a = (struct ibv_qp_attr){.qp_state = IBV_QPS_INIT, .port_num = 1};
    CHECK(modify(&uc, &a, init_mask) == 0 && qp_state(&uc) == IBV_QPS_INIT);
    CHECK(sv_recv(&uc, 1, 0, 64) == 0);
    CHECK(sv_send(&uc, IBV_WR_SEND, 1, 0, 64, 0, 0, 0) == EINVAL); /* sends need RTS */
    fill_rtr(&uc, &rc, &a);
    CHECK(modify(&uc, &a, rtr_rc) == EINVAL); /* UC takes no RNR timer */
    a.ah_attr.is_global = 0;
    CHECK(modify(&uc, &a, rtr_uc) == EINVAL); /* RoCE needs the GRH */
    fill_rtr(&uc, &rc, &a);
    a.ah_attr.grh.sgid_index = 5; /* an empty GID entry */
    CHECK(modify(&uc, &a, rtr_uc) == EINVAL);
    fill_rtr(&uc, &rc, &a);
    a.path_mtu = IBV_MTU_4096 + 1;
    CHECK(modify(&uc, &a, rtr_uc) == EINVAL);
    fill_rtr(&uc, &rc, &a);
    CHECK(modify(&uc, &a, rtr_uc) == 0 && qp_state(&uc) == IBV_QPS_RTR);
    a.qp_state = IBV_QPS_RTS;
    CHECK(modify(&uc, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT) == EINVAL);
    CHECK(modify(&uc, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0 && qp_state(&uc) == IBV_QPS_RTS);
    /* RC needs the RNR timer at RTR and the retry settings at RTS. */
    a = (struct ibv_qp_attr){.qp_state = IBV_QPS_INIT, .port_num = 1};
    CHECK(modify(&rc, &a, init_mask) == 0);
    fill_rtr(&rc, &uc, &a);
    CHECK(modify(&rc, &a, rtr_uc) == EINVAL);
    CHECK(modify(&rc, &a, rtr_rc) == 0);
    a.qp_state = IBV_QPS_RTS;
    CHECK(modify(&rc, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == EINVAL);
    a.qp_state = IBV_QPS_ERR;
    CHECK(modify(&rc, &a, IBV_QP_STATE) == 0 && qp_state(&rc) == IBV_QPS_ERR);
    a.qp_state = IBV_QPS_RESET;
    CHECK(modify(&rc, &a, IBV_QP_STATE) == 0 && qp_state(&rc) == IBV_QPS_RESET);
    sv_ep_close(&uc);
    sv_ep_close(&rc);
    return 0;
}

static void test_state_machine(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_linux, s_state_machine), 0);
}

/* ---- data path ---- */

static int s_uc_send_recv(void)
{
    sv_ep a, b;
    struct ibv_wc wc;
    sv_pair(&a, &b, IBV_QPT_UC, 16, 8192);
    for (int i = 0; i < 1000; i++)
        a.buf[i] = (unsigned char)(i * 7);
    CHECK(sv_recv(&b, 11, 0, 4096) == 0);
    CHECK(sv_send(&a, IBV_WR_SEND_WITH_IMM, 22, 0, 1000, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_wc(&a, IBV_WC_SUCCESS, 22);
    CHECK(sv_poll(b.cq, &wc, 3000) == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 11);
    CHECK(wc.opcode == IBV_WC_RECV && wc.byte_len == 1000 && wc.src_qp == a.qp->qp_num);
    CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && be32toh(wc.imm_data) == 0xabcd);
    CHECK(!memcmp(a.buf, b.buf, 1000));
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

/* UC: a SEND that finds no RECV is gone, while the sender sees success. */
static int s_uc_drop_without_recv(void)
{
    sv_ep a, b;
    sv_pair(&a, &b, IBV_QPT_UC, 16, 8192);
    a.buf[0] = 'x';
    CHECK(sv_send(&a, IBV_WR_SEND, 1, 0, 1, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_wc(&a, IBV_WC_SUCCESS, 1);
    expect_none(&b, 50);
    CHECK(sv_recv(&b, 2, 0, 64) == 0);
    a.buf[0] = 'y';
    CHECK(sv_send(&a, IBV_WR_SEND, 3, 0, 1, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_wc(&a, IBV_WC_SUCCESS, 3);
    expect_wc(&b, IBV_WC_SUCCESS, 2);
    CHECK(b.buf[0] == 'y');
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

/* RC without a RECV: RNR NAKs, then IBV_WC_RNR_RETRY_EXC_ERR, the QP in ERR, later WRs flushed. */
static int s_rc_rnr_exhausted(void)
{
    sv_ep a, b;
    int access = IBV_ACCESS_LOCAL_WRITE;
    sv_ep_open(&a, 0, IBV_QPT_RC, 16, 4096, access);
    sv_ep_open(&b, 1, IBV_QPT_RC, 16, 4096, access);
    a.rnr_retry = 2;
    CHECK(sv_ep_connect(&a, b.qp->qp_num, &b.gid) == 0);
    CHECK(sv_ep_connect(&b, a.qp->qp_num, &a.gid) == 0);
    CHECK(sv_send(&a, IBV_WR_SEND, 1, 0, 8, 0, 0, 0) == 0); /* errors complete unsignaled too */
    expect_wc(&a, IBV_WC_RNR_RETRY_EXC_ERR, 1);
    CHECK(qp_state(&a) == IBV_QPS_ERR);
    CHECK(sv_send(&a, IBV_WR_SEND, 2, 0, 8, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_wc(&a, IBV_WC_WR_FLUSH_ERR, 2);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

/* RC with rnr_retry 7 retries until the RECV comes. */
static int s_rc_rnr_recovers(void)
{
    sv_ep a, b;
    sv_pair(&a, &b, IBV_QPT_RC, 16, 4096);
    a.buf[0] = 'r';
    CHECK(sv_send(&a, IBV_WR_SEND, 1, 0, 1, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_none(&a, 30);
    CHECK(sv_recv(&b, 2, 0, 64) == 0);
    expect_wc(&a, IBV_WC_SUCCESS, 1);
    expect_wc(&b, IBV_WC_SUCCESS, 2);
    CHECK(b.buf[0] == 'r');
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

static void test_data_path(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_linux, s_uc_send_recv), 0);
    assert_int_equal(sv_run(env_linux, s_uc_drop_without_recv), 0);
    assert_int_equal(sv_run(env_linux, s_rc_rnr_exhausted), 0);
    assert_int_equal(sv_run(env_linux, s_rc_rnr_recovers), 0);
}

/* A RECV smaller than the SEND: LOC_LEN_ERR at the receiver, REM_INV_REQ_ERR at an RC sender. */
static int s_rc_too_long(void)
{
    sv_ep a, b;
    sv_pair(&a, &b, IBV_QPT_RC, 16, 4096);
    CHECK(sv_recv(&b, 1, 0, 16) == 0);
    CHECK(sv_send(&a, IBV_WR_SEND, 2, 0, 100, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_wc(&a, IBV_WC_REM_INV_REQ_ERR, 2);
    expect_wc(&b, IBV_WC_LOC_LEN_ERR, 1);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

/* The link's addresses must match the receiver's RTR: a wrong source GID (link-local instead of
 * IPv4-mapped) is dropped, silently on UC, as retry exhaustion on RC. */
static int wrong_gid(enum ibv_qp_type type)
{
    sv_ep a, b;
    sv_pair(&a, &b, type, 16, 4096);
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr ia;
    CHECK(ibv_query_qp(b.qp, &attr, IBV_QP_AV, &ia) == 0);
    /* Re-point b at a's link-local GID: a still sends from its IPv4 one. */
    CHECK(ibv_query_gid(a.ctx, 1, 0, &attr.ah_attr.grh.dgid) == 0);
    attr.qp_state = IBV_QPS_RESET;
    CHECK(ibv_modify_qp(b.qp, &attr, IBV_QP_STATE) == 0);
    CHECK(sv_ep_connect(&b, a.qp->qp_num, &attr.ah_attr.grh.dgid) == 0);
    CHECK(sv_recv(&b, 1, 0, 64) == 0);
    CHECK(sv_send(&a, IBV_WR_SEND, 2, 0, 8, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_wc(&a, type == IBV_QPT_UC ? IBV_WC_SUCCESS : IBV_WC_RETRY_EXC_ERR, 2);
    expect_none(&b, 30);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

static int s_uc_wrong_gid(void)
{
    return wrong_gid(IBV_QPT_UC);
}

static int s_rc_wrong_gid(void)
{
    return wrong_gid(IBV_QPT_RC);
}

static void test_addressing(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_linux, s_rc_too_long), 0);
    assert_int_equal(sv_run(env_linux, s_uc_wrong_gid), 0);
    assert_int_equal(sv_run(env_linux, s_rc_wrong_gid), 0);
}

/* ---- memory regions ---- */

static int post_with_lkey(sv_ep *e, size_t off, size_t len, uint32_t lkey)
{
    struct ibv_sge sge = {.addr = (uintptr_t)(e->buf + off), .length = (uint32_t)len, .lkey = lkey};
    struct ibv_send_wr wr = {.wr_id = 9,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_SIGNALED};
    struct ibv_send_wr *bad;
    return ibv_post_send(e->qp, &wr, &bad);
}

static int s_mr_local(void)
{
    sv_ep a, b;
    sv_ep_open(&a, 0, IBV_QPT_UC, 16, 4096, IBV_ACCESS_LOCAL_WRITE);
    CHECK(ibv_reg_mr(a.pd, a.buf, 4096, IBV_ACCESS_REMOTE_WRITE) == NULL && errno == EINVAL);
    sv_ep_close(&a);
    sv_pair(&a, &b, IBV_QPT_UC, 16, 4096);
    CHECK(post_with_lkey(&a, 0, 8, a.mr->lkey ^ 0x100) == 0); /* no such key */
    expect_wc(&a, IBV_WC_LOC_PROT_ERR, 9);
    sv_ep_close(&a);
    sv_ep_close(&b);
    sv_pair(&a, &b, IBV_QPT_UC, 16, 4096);
    CHECK(post_with_lkey(&a, 4000, 200, a.mr->lkey) == 0); /* runs past the MR's end */
    expect_wc(&a, IBV_WC_LOC_PROT_ERR, 9);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

/* A RECV into an MR without local write fails at the receiver. */
static int s_mr_recv_readonly(void)
{
    sv_ep a, b;
    struct ibv_mr *ro;
    struct ibv_sge sge;
    struct ibv_recv_wr wr = {.wr_id = 5, .sg_list = &sge, .num_sge = 1}, *bad;
    sv_pair(&a, &b, IBV_QPT_UC, 16, 8192);
    CHECK((ro = ibv_reg_mr(b.pd, b.buf + 4096, 4096, 0)) != NULL);
    sge = (struct ibv_sge){.addr = (uintptr_t)(b.buf + 4096), .length = 64, .lkey = ro->lkey};
    CHECK(ibv_post_recv(b.qp, &wr, &bad) == 0);
    CHECK(sv_send(&a, IBV_WR_SEND, 1, 0, 8, 0, 0, 0) == 0);
    expect_wc(&b, IBV_WC_LOC_PROT_ERR, 5);
    CHECK(ibv_dereg_mr(ro) == 0);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

/* RDMA WRITE on RC: lands in bounds with remote write; else IBV_WC_REM_ACCESS_ERR. */
static int s_rc_write(void)
{
    sv_ep a, b;
    struct ibv_mr *local_only;
    uint64_t base;
    sv_pair(&a, &b, IBV_QPT_RC, 16, 8192);
    base = (uintptr_t)b.buf;
    memcpy(a.buf, "written", 8);
    CHECK(sv_send(&a, IBV_WR_RDMA_WRITE, 1, 0, 8, IBV_SEND_SIGNALED, base + 100, b.mr->rkey) == 0);
    expect_wc(&a, IBV_WC_SUCCESS, 1);
    CHECK(!memcmp(b.buf + 100, "written", 8));
    expect_none(&b, 10); /* a plain WRITE uses no RECV */
    CHECK(sv_send(&a, IBV_WR_RDMA_WRITE, 2, 0, 8, 0, base + 8190, b.mr->rkey) == 0);
    expect_wc(&a, IBV_WC_REM_ACCESS_ERR, 2);
    sv_ep_close(&a);
    sv_ep_close(&b);
    sv_pair(&a, &b, IBV_QPT_RC, 16, 8192);
    CHECK((local_only = ibv_reg_mr(b.pd, b.buf, 4096, IBV_ACCESS_LOCAL_WRITE)) != NULL);
    CHECK(sv_send(&a, IBV_WR_RDMA_WRITE, 3, 0, 8, 0, (uintptr_t)b.buf, local_only->rkey) == 0);
    expect_wc(&a, IBV_WC_REM_ACCESS_ERR, 3);
    CHECK(ibv_dereg_mr(local_only) == 0);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

static void test_memory_regions(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_linux, s_mr_local), 0);
    assert_int_equal(sv_run(env_linux, s_mr_recv_readonly), 0);
    assert_int_equal(sv_run(env_linux, s_rc_write), 0);
}

/* ---- queues ---- */

/* A CQ of 2 that gets 3 completions is broken: ibv_poll_cq fails. */
static int s_cq_overflow(void)
{
    sv_ep a, b;
    struct ibv_wc wc;
    sv_ep_open(&a, 0, IBV_QPT_UC, 2, 4096, IBV_ACCESS_LOCAL_WRITE);
    sv_ep_open(&b, 1, IBV_QPT_UC, 16, 4096, IBV_ACCESS_LOCAL_WRITE);
    CHECK(sv_ep_connect(&a, b.qp->qp_num, &b.gid) == 0);
    CHECK(sv_ep_connect(&b, a.qp->qp_num, &a.gid) == 0);
    for (int i = 0; i < 3; i++)
        CHECK(sv_recv(&b, (uint64_t)i, 0, 64) == 0);
    for (int i = 0; i < 3; i++)
        CHECK(sv_send(&a, IBV_WR_SEND, (uint64_t)i, 0, 8, IBV_SEND_SIGNALED, 0, 0) == 0);
    for (int i = 0; i < 3; i++)
        expect_wc(&b, IBV_WC_SUCCESS, (uint64_t)i);
    CHECK(ibv_poll_cq(a.cq, 1, &wc) < 0 && errno == EOVERFLOW);
    CHECK(qp_state(&a) == IBV_QPS_ERR);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

/* Unsignaled sends keep their slots until a later send completion is polled. */
static int s_send_queue_slots(void)
{
    sv_ep a, b;
    sv_pair(&a, &b, IBV_QPT_UC, 64, 4096);
    for (int i = 0; i < 16; i++)
        CHECK(sv_recv(&b, (uint64_t)i, 0, 64) == 0);
    for (int i = 0; i < 16; i++)
        CHECK(sv_send(&a, IBV_WR_SEND, (uint64_t)i, 0, 8, 0, 0, 0) == 0);
    for (int i = 0; i < 16; i++)
        expect_wc(&b, IBV_WC_SUCCESS, (uint64_t)i);
    CHECK(sv_send(&a, IBV_WR_SEND, 99, 0, 8, IBV_SEND_SIGNALED, 0, 0) == ENOMEM);
    sv_ep_close(&a);
    sv_ep_close(&b);
    sv_pair(&a, &b, IBV_QPT_UC, 64, 4096);
    for (int i = 0; i < 15; i++)
        CHECK(sv_send(&a, IBV_WR_SEND, (uint64_t)i, 0, 8, 0, 0, 0) == 0);
    CHECK(sv_send(&a, IBV_WR_SEND, 15, 0, 8, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_wc(&a, IBV_WC_SUCCESS, 15); /* retires all 16 */
    for (int i = 0; i < 16; i++)
        CHECK(sv_send(&a, IBV_WR_SEND, (uint64_t)i, 0, 8, 0, 0, 0) == 0);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

/* An armed CQ makes one event on its channel; a CQ with unacknowledged events cannot go. */
static int s_channel_events(void)
{
    sv_ep a, b;
    struct ibv_cq *cq;
    void *ctx;
    struct pollfd pfd;
    sv_pair(&a, &b, IBV_QPT_UC, 16, 4096);
    CHECK(ibv_req_notify_cq(b.cq, 0) == 0);
    CHECK(sv_recv(&b, 1, 0, 64) == 0);
    CHECK(sv_send(&a, IBV_WR_SEND, 2, 0, 8, 0, 0, 0) == 0);
    pfd = (struct pollfd){.fd = b.ch->fd, .events = POLLIN};
    CHECK(poll(&pfd, 1, 3000) == 1);
    CHECK(ibv_get_cq_event(b.ch, &cq, &ctx) == 0 && cq == b.cq && ctx == &b);
    expect_wc(&b, IBV_WC_SUCCESS, 1);
    CHECK(ibv_destroy_qp(b.qp) == 0);
    CHECK(ibv_destroy_cq(b.cq) == EBUSY);
    ibv_ack_cq_events(b.cq, 1);
    CHECK((b.qp = ibv_create_qp(b.pd, &(struct ibv_qp_init_attr){
                                          .send_cq = b.cq,
                                          .recv_cq = b.cq,
                                          .qp_type = IBV_QPT_UC,
                                          .cap = {.max_send_wr = 1, .max_recv_wr = 1}})) != NULL);
    CHECK(ibv_close_device(b.ctx) == EBUSY); /* resources still open */
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

static void test_queues(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_linux, s_cq_overflow), 0);
    assert_int_equal(sv_run(env_linux, s_send_queue_slots), 0);
    assert_int_equal(sv_run(env_linux, s_channel_events), 0);
}

/* ---- the apple profile ---- */

static int s_apple_limits(void)
{
    sv_ep a, b;
    struct ibv_device_attr da;
    struct ibv_mr *mrs[100];
    struct ibv_qp *qps[10];
    struct ibv_qp_init_attr ia = {
        .qp_type = IBV_QPT_UC,
        .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
    int nmr = 0, nqp = 0;
    sv_pair(&a, &b, IBV_QPT_UC, 16, 8192);
    CHECK(ibv_query_device(a.ctx, &da) == 0 && da.max_qp == 10 && da.max_mr == 100);
    CHECK(ibv_reg_mr(a.pd, a.buf + 8, 64, IBV_ACCESS_LOCAL_WRITE) == NULL && errno == EINVAL);
    while (nmr < 100 && (mrs[nmr] = ibv_reg_mr(a.pd, a.buf, 4096, IBV_ACCESS_LOCAL_WRITE)))
        nmr++;
    CHECK(nmr == 99 && errno == ENOMEM); /* one is sv_ep_open's */
    ia.send_cq = ia.recv_cq = a.cq;
    while (nqp < 10 && (qps[nqp] = ibv_create_qp(a.pd, &ia)))
        nqp++;
    CHECK(nqp == 9 && errno == ENOMEM);
    ia.cap.max_inline_data = 64;
    CHECK(ibv_create_qp(b.pd, &ia) == NULL && errno == EINVAL);
    ia.cap.max_inline_data = 0;
    ia.cap.max_send_sge = 2;
    CHECK(ibv_create_qp(b.pd, &ia) == NULL && errno == EINVAL);
    CHECK(sv_send(&a, IBV_WR_RDMA_WRITE, 1, 0, 8, 0, (uintptr_t)b.buf, b.mr->rkey) == EINVAL);
    while (nmr > 0)
        CHECK(ibv_dereg_mr(mrs[--nmr]) == 0);
    while (nqp > 0)
        CHECK(ibv_destroy_qp(qps[--nqp]) == 0);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

static void test_apple_profile(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_apple, s_apple_limits), 0);
}

/* ---- fault injection ---- */

/* Three messages, the second dropped: UC puts the third into the second RECV. */
static int drop_second(enum ibv_qp_type type)
{
    sv_ep a, b;
    struct ibv_wc wc;
    sv_pair(&a, &b, type, 16, 4096);
    for (int i = 0; i < 3; i++) {
        CHECK(sv_recv(&b, (uint64_t)i, 64 * (size_t)i, 64) == 0);
        a.buf[i] = (unsigned char)('A' + i);
    }
    for (int i = 0; i < 3; i++)
        CHECK(sv_send(&a, IBV_WR_SEND, (uint64_t)i, (size_t)i, 1, IBV_SEND_SIGNALED, 0, 0) == 0);
    for (int i = 0; i < 3; i++)
        expect_wc(&a, IBV_WC_SUCCESS, (uint64_t)i);
    expect_wc(&b, IBV_WC_SUCCESS, 0);
    expect_wc(&b, IBV_WC_SUCCESS, 1);
    CHECK(b.buf[0] == 'A');
    if (type == IBV_QPT_UC) {
        CHECK(b.buf[64] == 'C');
        CHECK(sv_poll(b.cq, &wc, 30) == 0);
    } else { /* RC retransmits: nothing lost */
        expect_wc(&b, IBV_WC_SUCCESS, 2);
        CHECK(b.buf[64] == 'B' && b.buf[128] == 'C');
    }
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

static int s_uc_drop(void)
{
    return drop_second(IBV_QPT_UC);
}

static int s_rc_drop(void)
{
    return drop_second(IBV_QPT_RC);
}

static int s_delay(void)
{
    sv_ep a, b;
    struct ibv_wc wc;
    sv_pair(&a, &b, IBV_QPT_UC, 16, 4096);
    CHECK(sv_recv(&b, 1, 0, 64) == 0);
    CHECK(sv_send(&a, IBV_WR_SEND, 2, 0, 8, IBV_SEND_SIGNALED, 0, 0) == 0);
    CHECK(sv_poll(a.cq, &wc, 60) == 0);
    expect_wc(&a, IBV_WC_SUCCESS, 2);
    expect_wc(&b, IBV_WC_SUCCESS, 1);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

static void test_fault_injection(void **state)
{
    static const char *const drop[] = {TWO_DEVICES, "SOFTVERBS_DROP_NTH=2", NULL};
    static const char *const delay[] = {TWO_DEVICES, "SOFTVERBS_DELAY_US=200000", NULL};
    (void)state;
    assert_int_equal(sv_run(drop, s_uc_drop), 0);
    assert_int_equal(sv_run(drop, s_rc_drop), 0);
    assert_int_equal(sv_run(delay, s_delay), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_devices),         cmocka_unit_test(test_device_env),
        cmocka_unit_test(test_state_machine),   cmocka_unit_test(test_data_path),
        cmocka_unit_test(test_addressing),      cmocka_unit_test(test_memory_regions),
        cmocka_unit_test(test_queues),          cmocka_unit_test(test_apple_profile),
        cmocka_unit_test(test_fault_injection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
