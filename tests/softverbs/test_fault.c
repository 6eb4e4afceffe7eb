/* test_fault.c - the emulator's faults (fault.c): random and burst loss, jitter, a device that goes
 * down and comes back, one that goes silent for a while, and their settings checked. Two QPs of one
 * process per scenario, so the draws of a seed meet the frames in one order and a run repeats
 * exactly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

#include "test_support.h"

#define TWO_DEVICES "SOFTVERBS_DEVICES=rdma_en2:10.0.2.1,rdma_en3:10.0.3.1"
#define MESSAGES 192

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

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

/* MESSAGES SENDs over UC in batches of 16, each with a RECV posted for it (so whether one arrives
 * depends on the draws alone, never on timing); exits with how many arrived. */
static int s_uc_loss(void)
{
    sv_ep a, b;
    struct ibv_wc wc;
    int got = 0, batch_got = 16;
    sv_pair(&a, &b, IBV_QPT_UC, 16, 4096);
    for (int i = 0; i < MESSAGES; i += 16) {
        for (int k = 0; k < batch_got; k++)
            CHECK(sv_recv(&b, 0, 0, 64) == 0);
        for (int k = 0; k < 16; k++) {
            CHECK(sv_send(&a, IBV_WR_SEND, (uint64_t)(i + k), 0, 1, IBV_SEND_SIGNALED, 0, 0) == 0);
            expect_wc(&a, IBV_WC_SUCCESS, (uint64_t)(i + k));
        }
        for (batch_got = 0; sv_poll(b.cq, &wc, 200) == 1; batch_got++)
            CHECK(wc.status == IBV_WC_SUCCESS);
        got += batch_got;
    }
    sv_ep_close(&a);
    sv_ep_close(&b);
    return got;
}

/* The same over RC: every message arrives, in order, the losses resent by the emulated NIC. */
static int s_rc_loss(void)
{
    sv_ep a, b;
    sv_pair(&a, &b, IBV_QPT_RC, 16, 4096);
    for (int i = 0; i < MESSAGES; i++) {
        CHECK(sv_recv(&b, (uint64_t)i, 0, 64) == 0);
        a.buf[0] = (unsigned char)i;
        CHECK(sv_send(&a, IBV_WR_SEND, (uint64_t)i, 0, 1, IBV_SEND_SIGNALED, 0, 0) == 0);
        expect_wc(&a, IBV_WC_SUCCESS, (uint64_t)i);
        expect_wc(&b, IBV_WC_SUCCESS, (uint64_t)i);
        CHECK(b.buf[0] == (unsigned char)i);
    }
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

/* Frame 2 lost with a burst of 3: frames 2, 3 and 4 go, 1, 5 and 6 arrive. */
static int s_burst(void)
{
    sv_ep a, b;
    struct ibv_wc wc;
    sv_pair(&a, &b, IBV_QPT_UC, 16, 4096);
    for (int i = 0; i < 6; i++) {
        CHECK(sv_recv(&b, (uint64_t)i, 64 * (size_t)i, 64) == 0);
        a.buf[i] = (unsigned char)('1' + i);
        CHECK(sv_send(&a, IBV_WR_SEND, (uint64_t)i, (size_t)i, 1, IBV_SEND_SIGNALED, 0, 0) == 0);
        expect_wc(&a, IBV_WC_SUCCESS, (uint64_t)i);
    }
    for (int i = 0; i < 3; i++)
        expect_wc(&b, IBV_WC_SUCCESS, (uint64_t)i);
    CHECK(b.buf[0] == '1' && b.buf[64] == '5' && b.buf[128] == '6');
    CHECK(sv_poll(b.cq, &wc, 30) == 0);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

/* Up to 50 ms of jitter: 12 completions made at once keep their order, the last visible after the
 * largest of their draws (under 20 ms: 0.4^12, and not with this seed). */
static int s_jitter(void)
{
    sv_ep a, b;
    uint64_t start = now_ms();
    sv_pair(&a, &b, IBV_QPT_UC, 16, 4096);
    for (int i = 0; i < 12; i++) {
        CHECK(sv_recv(&b, (uint64_t)i, 0, 64) == 0);
        CHECK(sv_send(&a, IBV_WR_SEND, (uint64_t)i, 0, 1, 0, 0, 0) == 0);
    }
    for (int i = 0; i < 12; i++)
        expect_wc(&b, IBV_WC_SUCCESS, (uint64_t)i);
    CHECK(now_ms() - start >= 20);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

static enum ibv_port_state port_state(sv_ep *e)
{
    struct ibv_port_attr pa;
    CHECK(ibv_query_port(e->ctx, 1, &pa) == 0);
    return pa.state;
}

/* rdma_en3 down from 0.3 s to 0.8 s: its port says so, its QP goes to the error state (the posted
 * RECV flushed, a send fails); rdma_en2's "#5" entry is another rank's and leaves it up. Back up,
 * a new pair works. */
static int s_device_down(void)
{
    sv_ep a, b;
    struct ibv_wc wc;
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr ia;
    sv_pair(&a, &b, IBV_QPT_RC, 16, 4096);
    CHECK(port_state(&b) == IBV_PORT_ACTIVE);
    CHECK(sv_recv(&b, 1, 0, 64) == 0);
    CHECK(sv_recv(&a, 2, 0, 64) == 0);
    usleep(400000);
    CHECK(port_state(&b) == IBV_PORT_DOWN && port_state(&a) == IBV_PORT_ACTIVE);
    expect_wc(&b, IBV_WC_WR_FLUSH_ERR, 1);
    CHECK(ibv_query_qp(b.qp, &attr, IBV_QP_STATE, &ia) == 0 && attr.qp_state == IBV_QPS_ERR);
    /* a is fine, but its peer is gone: the emulated NIC's retries run out */
    CHECK(sv_send(&a, IBV_WR_SEND, 3, 0, 1, IBV_SEND_SIGNALED, 0, 0) == 0);
    CHECK(sv_poll(a.cq, &wc, 3000) == 1 && wc.wr_id == 3 && wc.status == IBV_WC_RETRY_EXC_ERR);
    sv_ep_close(&a);
    sv_ep_close(&b);
    usleep(500000);
    sv_pair(&a, &b, IBV_QPT_RC, 16, 4096);
    CHECK(port_state(&b) == IBV_PORT_ACTIVE);
    CHECK(sv_recv(&b, 4, 0, 64) == 0);
    a.buf[0] = 'z';
    CHECK(sv_send(&a, IBV_WR_SEND, 5, 0, 1, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_wc(&a, IBV_WC_SUCCESS, 5);
    expect_wc(&b, IBV_WC_SUCCESS, 4);
    CHECK(b.buf[0] == 'z');
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

/* One UC SEND from `from` to `to`, a RECV id posted for it: the id of the RECV it completed
 * within 100 ms (an older one left unused comes first), 0 if it did not arrive. */
static uint64_t uc_arrives(sv_ep *from, sv_ep *to, uint64_t id)
{
    struct ibv_wc wc;
    CHECK(sv_recv(to, id, 0, 64) == 0);
    CHECK(sv_send(from, IBV_WR_SEND, id, 0, 1, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_wc(from, IBV_WC_SUCCESS, id); /* UC: sent, whatever became of it */
    return sv_poll(to->cq, &wc, 100) == 1 && wc.status == IBV_WC_SUCCESS ? wc.wr_id : 0;
}

/* rdma_en3 silent from 0.3 s to 0.8 s: nothing goes either way on its UC QP, though its port
 * stays active and its QP at RTS and every send completes; afterwards the same QPs carry again
 * (into the RECVs posted during the silence first). */
static int s_device_silent(void)
{
    sv_ep a, b;
    struct ibv_qp_attr attr;
    struct ibv_qp_init_attr ia;
    sv_pair(&a, &b, IBV_QPT_UC, 16, 4096);
    CHECK(uc_arrives(&a, &b, 1) == 1);
    usleep(400000);
    CHECK(uc_arrives(&a, &b, 2) == 0 && uc_arrives(&b, &a, 3) == 0);
    CHECK(port_state(&b) == IBV_PORT_ACTIVE);
    CHECK(ibv_query_qp(b.qp, &attr, IBV_QP_STATE, &ia) == 0 && attr.qp_state == IBV_QPS_RTS);
    usleep(500000);
    CHECK(uc_arrives(&a, &b, 4) == 2 && uc_arrives(&b, &a, 5) == 3);
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

/* RC, the first frame lost in a burst of 20: the resend, a QP timeout later, is past the burst
 * and arrives (retry_cnt is 3: were the burst to hit the resends too, they would run out). */
static int s_rc_burst(void)
{
    sv_ep a, b;
    sv_pair(&a, &b, IBV_QPT_RC, 16, 4096);
    CHECK(sv_recv(&b, 1, 0, 64) == 0);
    a.buf[0] = 'r';
    CHECK(sv_send(&a, IBV_WR_SEND, 2, 0, 1, IBV_SEND_SIGNALED, 0, 0) == 0);
    expect_wc(&a, IBV_WC_SUCCESS, 2);
    expect_wc(&b, IBV_WC_SUCCESS, 1);
    CHECK(b.buf[0] == 'r');
    sv_ep_close(&a);
    sv_ep_close(&b);
    return 0;
}

static int s_bad_setting(void)
{
    int n = -1;
    CHECK(ibv_get_device_list(&n) == NULL && errno == EINVAL && n == 0);
    return 0;
}

static void test_loss(void **state)
{
    static const char *const seed7[] = {TWO_DEVICES, "SOFTVERBS_LOSS=0.3", "SOFTVERBS_SEED=7",
                                        NULL};
    static const char *const rc[] = {TWO_DEVICES, "SOFTVERBS_LOSS=0.1", "SOFTVERBS_SEED=7", NULL};
    int first, again;
    (void)state;
    first = sv_run(seed7, s_uc_loss);
    again = sv_run(seed7, s_uc_loss);
    /* 0.3 of 192 lost: about 134 arrive; the same seed draws the same losses */
    assert_in_range(first, 100, 165);
    assert_int_equal(first, again);
    assert_int_equal(sv_run(rc, s_rc_loss), 0);
}

static void test_burst(void **state)
{
    static const char *const env[] = {TWO_DEVICES, "SOFTVERBS_DROP_NTH=2", "SOFTVERBS_LOSS_BURST=3",
                                      NULL};
    static const char *const rc[] = {TWO_DEVICES, "SOFTVERBS_DROP_NTH=1", "SOFTVERBS_LOSS_BURST=20",
                                     NULL};
    (void)state;
    assert_int_equal(sv_run(env, s_burst), 0);
    assert_int_equal(sv_run(rc, s_rc_burst), 0);
}

static void test_jitter(void **state)
{
    static const char *const env[] = {TWO_DEVICES, "SOFTVERBS_JITTER_US=50000", "SOFTVERBS_SEED=1",
                                      NULL};
    (void)state;
    assert_int_equal(sv_run(env, s_jitter), 0);
}

static void test_device_down(void **state)
{
    static const char *const env[] = {TWO_DEVICES,
                                      "SOFTVERBS_DEVICE_DOWN=rdma_en3@0.3-0.8,rdma_en2#5@0", NULL};
    (void)state;
    assert_int_equal(sv_run(env, s_device_down), 0);
}

static void test_device_silent(void **state)
{
    static const char *const env[] = {TWO_DEVICES, "SOFTVERBS_DEVICE_SILENT=rdma_en3@0.3-0.8",
                                      NULL};
    (void)state;
    assert_int_equal(sv_run(env, s_device_silent), 0);
}

static void test_bad_settings(void **state)
{
    static const char *const bad[][3] = {
        {TWO_DEVICES, "SOFTVERBS_LOSS=1.5", NULL},
        {TWO_DEVICES, "SOFTVERBS_LOSS=lots", NULL},
        {TWO_DEVICES, "SOFTVERBS_LOSS_BURST=0", NULL},
        {TWO_DEVICES, "SOFTVERBS_SEED=-x", NULL},
        {TWO_DEVICES, "SOFTVERBS_DEVICE_DOWN=rdma_en9@1", NULL},
        {TWO_DEVICES, "SOFTVERBS_DEVICE_DOWN=rdma_en2@2-1", NULL},
        {TWO_DEVICES, "SOFTVERBS_DEVICE_DOWN=rdma_en2", NULL},
        {TWO_DEVICES, "SOFTVERBS_DEVICE_SILENT=rdma_en9@1", NULL},
        {TWO_DEVICES, "SOFTVERBS_DEVICE_SILENT=rdma_en2@2-1", NULL},
    };
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(sv_run(bad[i], s_bad_setting), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss),          cmocka_unit_test(test_burst),
        cmocka_unit_test(test_jitter),        cmocka_unit_test(test_device_down),
        cmocka_unit_test(test_device_silent), cmocka_unit_test(test_bad_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
