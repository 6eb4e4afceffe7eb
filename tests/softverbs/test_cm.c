/* test_cm.c - the connection manager emulator (libsoftrdmacm.so): the event flow of a connection
 * and its data, a reject, addresses without a device or a route, a port nobody listens on, an
 * event not acked, and the ib
 * profile's LID addressing. Both ends live in one process, on two event channels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <rdma/rdma_cma.h>

#include "test_support.h"

static const char *const env_roce[] = {"SOFTVERBS_DEVICES=mlx5_0:127.0.0.1,mlx5_1:127.0.0.2",
                                       "SOFTVERBS_PROFILE=linux", NULL};
static const char *const env_ib[] = {"SOFTVERBS_DEVICES=mlx5_0:127.0.0.1,mlx5_1:127.0.0.2",
                                     "SOFTVERBS_PROFILE=ib", NULL};

static struct sockaddr_in addr(const char *ip, uint16_t port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = port};
    CHECK(inet_pton(AF_INET, ip, &a.sin_addr) == 1);
    return a;
}

/* The next event of ch, which must be of type want for id (NULL: any id); acked unless keep. */
static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want,
                                    struct rdma_cm_id *id)
{
    struct rdma_cm_event *ev;
    CHECK(rdma_get_cm_event(ch, &ev) == 0);
    if (ev->event != want || (id && ev->id != id)) {
        fprintf(stderr, "got %s (status %d), expected %s\n", rdma_event_str(ev->event), ev->status,
                rdma_event_str(want));
        _exit(1);
    }
    return ev;
}

/* A QP on the id's device, RC, with a CQ and a registered buffer. */
static void make_qp(struct rdma_cm_id *id, sv_ep *e)
{
    struct ibv_qp_init_attr ia = {
        .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};
    memset(e, 0, sizeof *e);
    e->ctx = id->verbs;
    e->len = 4096;
    CHECK((e->pd = ibv_alloc_pd(e->ctx)) != NULL);
    CHECK((e->cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0)) != NULL);
    CHECK((e->buf = aligned_alloc(4096, e->len)) != NULL);
    CHECK((e->mr = ibv_reg_mr(e->pd, e->buf, e->len, IBV_ACCESS_LOCAL_WRITE)) != NULL);
    ia.send_cq = ia.recv_cq = e->cq;
    CHECK(rdma_create_qp(id, e->pd, &ia) == 0);
    e->qp = id->qp;
}

typedef struct pair {
    struct rdma_event_channel *ca, *cb;
    struct rdma_cm_id *listener, *a, *b; /* a: the passive end (the child), b: the active one */
    sv_ep ea, eb;
} pair;

/* Listen on 127.0.0.1, resolve to it from 127.0.0.2 and connect with private data "hello": up to
 * the passive side's CONNECT_REQUEST, which is checked. */
static void request(pair *p)
{
    struct sockaddr_in la = addr("127.0.0.1", 0), src = addr("127.0.0.2", 0), dst;
    struct rdma_conn_param param = {.private_data = "hello", .private_data_len = 6};
    struct rdma_cm_event *ev;
    CHECK((p->ca = rdma_create_event_channel()) && (p->cb = rdma_create_event_channel()));
    CHECK(rdma_create_id(p->ca, &p->listener, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(p->listener, (struct sockaddr *)&la) == 0);
    CHECK(!strcmp(ibv_get_device_name(p->listener->verbs->device), "mlx5_0"));
    CHECK(rdma_listen(p->listener, 4) == 0);
    dst = addr("127.0.0.1", rdma_get_src_port(p->listener));
    CHECK(rdma_create_id(p->cb, &p->b, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_resolve_addr(p->b, (struct sockaddr *)&src, (struct sockaddr *)&dst, 100) == 0);
    rdma_ack_cm_event(expect(p->cb, RDMA_CM_EVENT_ADDR_RESOLVED, p->b));
    CHECK(!strcmp(ibv_get_device_name(p->b->verbs->device), "mlx5_1"));
    CHECK(rdma_resolve_route(p->b, 100) == 0);
    rdma_ack_cm_event(expect(p->cb, RDMA_CM_EVENT_ROUTE_RESOLVED, p->b));
    make_qp(p->b, &p->eb);
    CHECK(rdma_connect(p->b, &param) == 0);
    ev = expect(p->ca, RDMA_CM_EVENT_CONNECT_REQUEST, NULL);
    CHECK(ev->listen_id == p->listener && ev->param.conn.private_data_len == 6 &&
          !strcmp(ev->param.conn.private_data, "hello"));
    p->a = ev->id;
    CHECK(p->a->verbs == p->listener->verbs);
    rdma_ack_cm_event(ev);
}

static void pair_close(pair *p)
{
    struct rdma_cm_id *ids[] = {p->a, p->b, p->listener};
    for (int i = 0; i < 3; i++)
        if (ids[i]) {
            rdma_destroy_qp(ids[i]);
            CHECK(rdma_destroy_id(ids[i]) == 0);
        }
    rdma_destroy_event_channel(p->ca);
    rdma_destroy_event_channel(p->cb);
}

/* Accepted: ESTABLISHED on both sides, then a SEND from b lands in a's buffer; b disconnects and
 * both see DISCONNECTED. */
static void connect_and_send(void)
{
    pair p = {0};
    struct ibv_wc wc;
    request(&p);
    make_qp(p.a, &p.ea);
    CHECK(rdma_accept(p.a, &(struct rdma_conn_param){.rnr_retry_count = 7}) == 0);
    rdma_ack_cm_event(expect(p.cb, RDMA_CM_EVENT_ESTABLISHED, p.b));
    rdma_ack_cm_event(expect(p.ca, RDMA_CM_EVENT_ESTABLISHED, p.a));
    CHECK(sv_recv(&p.ea, 1, 0, 64) == 0);
    memcpy(p.eb.buf, "over rdma_cm", 13);
    CHECK(sv_send(&p.eb, IBV_WR_SEND, 2, 0, 13, IBV_SEND_SIGNALED, 0, 0) == 0);
    CHECK(sv_poll(p.ea.cq, &wc, 5000) == 1 && wc.status == IBV_WC_SUCCESS && wc.byte_len == 13);
    CHECK(!memcmp(p.ea.buf, "over rdma_cm", 13));
    CHECK(sv_poll(p.eb.cq, &wc, 5000) == 1 && wc.status == IBV_WC_SUCCESS);
    CHECK(rdma_disconnect(p.b) == 0);
    rdma_ack_cm_event(expect(p.cb, RDMA_CM_EVENT_DISCONNECTED, p.b));
    rdma_ack_cm_event(expect(p.ca, RDMA_CM_EVENT_DISCONNECTED, p.a));
    pair_close(&p);
}

static int scenario_flow(void)
{
    connect_and_send();
    return 0;
}

/* ib: ports have LIDs and no IPv4-mapped GID, and the connection still carries data (by LID). */
static int scenario_ib(void)
{
    pair p = {0};
    struct sockaddr_in la = addr("127.0.0.1", 0);
    struct ibv_port_attr pa;
    union ibv_gid g;
    CHECK((p.ca = rdma_create_event_channel()) != NULL);
    CHECK(rdma_create_id(p.ca, &p.listener, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_bind_addr(p.listener, (struct sockaddr *)&la) == 0);
    memset(&pa, 0, sizeof pa);
    CHECK(ibv_query_port(p.listener->verbs, 1, &pa) == 0);
    CHECK(pa.lid != 0 && pa.link_layer == IBV_LINK_LAYER_INFINIBAND);
    for (int i = 0; i < (int)pa.gid_tbl_len; i++)
        CHECK(ibv_query_gid(p.listener->verbs, 1, i, &g) == 0 && g.raw[10] != 0xff);
    CHECK(rdma_destroy_id(p.listener) == 0);
    rdma_destroy_event_channel(p.ca);
    connect_and_send();
    return 0;
}

/* Rejected with private data: REJECTED (consumer reason 28) with it on the active side. */
static int scenario_reject(void)
{
    pair p = {0};
    struct rdma_cm_event *ev;
    request(&p);
    CHECK(rdma_reject(p.a, "no", 3) == 0);
    ev = expect(p.cb, RDMA_CM_EVENT_REJECTED, p.b);
    CHECK(ev->status == 28 && ev->param.conn.private_data_len == 3 &&
          !strcmp(ev->param.conn.private_data, "no"));
    rdma_ack_cm_event(ev);
    pair_close(&p);
    return 0;
}

/* A destination without a device: ADDR_ERROR. */
static int scenario_errors(void)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *id;
    struct sockaddr_in src = addr("127.0.0.2", 0), nodev = addr("127.0.0.9", htons(9));
    struct rdma_cm_event *ev;
    CHECK(ch && rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&nodev, 100) == 0);
    ev = expect(ch, RDMA_CM_EVENT_ADDR_ERROR, id);
    CHECK(ev->status < 0);
    rdma_ack_cm_event(ev);
    CHECK(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
    return 0;
}

/* ROUTE_ERROR towards an address of SOFTVERBS_CM_NO_ROUTE that has a device; REJECTED on a port
 * nobody listens on. */
static int scenario_route(void)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *id;
    struct sockaddr_in src = addr("127.0.0.2", 0), noroute = addr("127.0.0.3", htons(9)),
                       closed = addr("127.0.0.1", htons(9));
    struct rdma_cm_event *ev;
    sv_ep e;
    CHECK(ch && rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&noroute, 100) == 0);
    rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, id));
    CHECK(rdma_resolve_route(id, 100) == 0);
    ev = expect(ch, RDMA_CM_EVENT_ROUTE_ERROR, id);
    CHECK(ev->status < 0);
    rdma_ack_cm_event(ev);
    CHECK(rdma_destroy_id(id) == 0);
    CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&closed, 100) == 0);
    rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, id));
    CHECK(rdma_resolve_route(id, 100) == 0);
    rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, id));
    make_qp(id, &e);
    CHECK(rdma_connect(id, NULL) == 0);
    ev = expect(ch, RDMA_CM_EVENT_REJECTED, id);
    CHECK(ev->status == 8);
    rdma_ack_cm_event(ev);
    rdma_destroy_qp(id);
    CHECK(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
    return 0;
}

/* An event taken and not acked: rdma_destroy_id would wait forever, the emulator aborts. */
static int scenario_unacked(void)
{
    struct rdma_event_channel *ch = rdma_create_event_channel();
    struct rdma_cm_id *id;
    struct sockaddr_in src = addr("127.0.0.2", 0), dst = addr("127.0.0.1", htons(9));
    CHECK(ch && rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0);
    CHECK(rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 100) == 0);
    expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, id);
    rdma_destroy_id(id);
    return 0; /* not reached */
}

static void test_flow(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_roce, scenario_flow), 0);
}

static void test_ib(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_ib, scenario_ib), 0);
}

static void test_reject(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_roce, scenario_reject), 0);
}

static void test_errors(void **state)
{
    static const char *const env_three[] = {
        "SOFTVERBS_DEVICES=mlx5_0:127.0.0.1,mlx5_1:127.0.0.2,mlx5_2:127.0.0.3",
        "SOFTVERBS_CM_NO_ROUTE=127.0.0.3", NULL};
    (void)state;
    assert_int_equal(sv_run(env_roce, scenario_errors), 0);
    assert_int_equal(sv_run(env_three, scenario_route), 0);
}

static void test_unacked(void **state)
{
    (void)state;
    assert_int_equal(sv_run(env_roce, scenario_unacked), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flow),    cmocka_unit_test(test_ib),
        cmocka_unit_test(test_reject),  cmocka_unit_test(test_errors),
        cmocka_unit_test(test_unacked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
