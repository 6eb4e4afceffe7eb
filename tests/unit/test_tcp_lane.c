/* tests/unit/test_tcp_lane.c - the bookkeeping of a lane's stream (backends/tcp/engine_kept.c,
 * its ack frames through engine_lane.c): frames kept once written, freed by the peer's acks, and
 * the replay from the position the peer consumed after a failover. No sockets: the frames are the
 * link's own (no request). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/tcp/engine_break.h"
#include "backends/tcp/engine_impl.h"
#include "backends/tcp/engine_kept.h"
#include "backends/tcp/engine_lane.h"
#include "backends/tcp/engine_write.h"

/* A pair of two lanes to rank 1, as seen from rank 0. */
typedef struct {
    tether__tcp_ep ep;
    tether__link lanes[2];
    tether__link *links[2];
    int nlinks[2];
} pair;

static void pair_init(pair *p)
{
    memset(p, 0, sizeof *p);
    for (int k = 0; k < 2; k++)
        p->lanes[k] = (tether__link){.fd = -1, .peer = 1, .index = k, .nlinks = 2, .pump = -1};
    p->links[1] = p->lanes;
    p->nlinks[1] = 2;
    p->ep.links = p->links;
    p->ep.nlinks = p->nlinks;
    p->ep.size = 2;
}

/* An owned frame of len payload bytes, written whole on l: l's position moves past it. */
static tether__txmsg *written(pair *p, tether__link *l, uint64_t len)
{
    tether__txmsg *t = calloc(1, sizeof *t + len);
    t->payload = (const unsigned char *)(t + 1);
    t->len = len;
    t->sent = TETHER__FRAME_SIZE + len;
    l->tx_pos += TETHER__FRAME_SIZE + len;
    tether__tcp_lane_keep(&p->ep, l, t);
    return t;
}

static int ack(pair *p, int lane, uint64_t pos)
{
    tether__frame f = {.type = TETHER__FRAME_ACK, .code = lane, .len = pos};
    return tether__tcp_lane_frame(&p->ep, &p->lanes[lane], &f);
}

static void test_acks_free_what_they_cover(void **state)
{
    (void)state;
    pair p;
    pair_init(&p);
    tether__link *l = &p.lanes[1];
    written(&p, l, 100);                    /* 0..132 */
    tether__txmsg *b = written(&p, l, 200); /* 132..364 */
    tether__txmsg *c = written(&p, l, 0);   /* 364..396 */
    assert_int_equal(ack(&p, 1, 200), 0);   /* inside b: only the first is done */
    assert_ptr_equal(l->kept, b);
    assert_ptr_equal(l->kept_tail, c);
    assert_int_equal(ack(&p, 1, 200), 0); /* again: acks are cumulative, a repeat changes nothing */
    assert_ptr_equal(l->kept, b);
    assert_int_equal(ack(&p, 1, 364), 0);
    assert_ptr_equal(l->kept, c);
    assert_int_equal(ack(&p, 1, 396), 0);
    assert_null(l->kept);
    assert_null(l->kept_tail);
    tether__tcp_lane_clear(l);
}

static void test_rewind_from_kept(void **state)
{
    (void)state;
    pair p;
    pair_init(&p);
    tether__link *l = &p.lanes[0];
    tether__txmsg *a = written(&p, l, 100); /* 0..132 */
    tether__txmsg *b = written(&p, l, 200); /* 132..364 */
    tether__txmsg *q = calloc(1, sizeof *q + 50);
    q->payload = (const unsigned char *)(q + 1);
    q->len = 50;
    q->sent = 10; /* half a header written: 364..374 */
    l->tx_pos += 10;
    tether__tcp_tx_push(l, q);
    assert_int_equal(tether__tcp_lane_rewind(l, 375), -1); /* never written */
    assert_int_equal(ack(&p, 0, 132), 0);
    assert_int_equal(tether__tcp_lane_rewind(l, 100), -1); /* acked already: not kept any more */
    (void)a;
    assert_int_equal(tether__tcp_lane_rewind(l, 200), 0); /* the peer consumed 68 bytes of b */
    assert_ptr_equal(l->txhead, b);
    assert_true(b->sent == 68);
    assert_ptr_equal(b->next, q);
    assert_true(q->sent == 0);
    assert_ptr_equal(l->txtail, q);
    assert_null(l->kept);
    assert_true(l->tx_pos == 200);
    tether__tcp_tx_clear(l);
    tether__tcp_lane_clear(l);
}

static void test_rewind_inside_the_queue_head(void **state)
{
    (void)state;
    pair p;
    pair_init(&p);
    tether__link *l = &p.lanes[0];
    tether__txmsg *q = calloc(1, sizeof *q + 100);
    q->payload = (const unsigned char *)(q + 1);
    q->len = 100;
    q->sent = 50;
    l->tx_pos = 1000; /* q began at 950; what came before was acked */
    tether__tcp_tx_push(l, q);
    assert_int_equal(tether__tcp_lane_rewind(l, 949), -1);
    assert_int_equal(tether__tcp_lane_rewind(l, 980), 0);
    assert_true(q->sent == 30);
    assert_true(l->tx_pos == 980);
    tether__tcp_tx_clear(l);
    tether__link *e = &p.lanes[1]; /* nothing kept or queued: only its own position will do */
    e->tx_pos = 64;
    assert_int_equal(tether__tcp_lane_rewind(e, 32), -1);
    assert_int_equal(tether__tcp_lane_rewind(e, 64), 0);
}

/* Small frames are copied and their parts finish when written, up to the lane's cap of copies;
 * past it a part waits for its ack, and an ack finishes it and frees the copies before it. */
static void test_copies_are_capped(void **state)
{
    (void)state;
    pair p;
    pair_init(&p);
    tether__link *l = &p.lanes[0];
    enum { N = 80, LEN = 64 << 10 };
    static unsigned char buf[LEN];
    struct tether__req *r = calloc(1, sizeof *r + sizeof r->part[0]);
    r->parts_left = N;
    for (int i = 0; i < N; i++) {
        tether__txmsg *t = &r->part[0].tx; /* one part, written again and again */
        *t = (tether__txmsg){.payload = buf, .len = LEN, .req = r};
        t->sent = TETHER__FRAME_SIZE + LEN;
        l->tx_pos += TETHER__FRAME_SIZE + LEN;
        tether__tcp_lane_keep(&p.ep, l, t);
        if (l->awaiting) /* the part is kept itself: the next round would reuse it */
            break;
    }
    assert_int_equal(l->awaiting, 1);
    assert_true(l->copies >= (4u << 20) && l->copies < (4u << 20) + LEN);
    assert_int_equal(r->parts_left, N - (int)(l->copies / LEN));
    assert_int_equal(ack(&p, 0, l->tx_pos), 0);
    assert_int_equal(l->awaiting, 0);
    assert_true(l->copies == 0);
    assert_null(l->kept);
    assert_int_equal(r->parts_left, N - (int)((4u << 20) / LEN) - 1);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acks_free_what_they_cover),
        cmocka_unit_test(test_rewind_from_kept),
        cmocka_unit_test(test_rewind_inside_the_queue_head),
        cmocka_unit_test(test_copies_are_capped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
