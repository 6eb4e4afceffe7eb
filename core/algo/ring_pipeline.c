/* core/algo/ring_pipeline.c - the pipelined ring under ring all-reduce, all-gather and
 * reduce-scatter.
 *
 * The words: n ranks sit on a ring in positions 0..n-1. The vector is cut into n chunks, one per
 * position, and every chunk into nseg segments. At global step s a position sends chunk
 * (pos - 1 - s) to the next position and receives chunk (pos - 2 - s) from the previous one. During
 * the reduce-scatter steps (s < n - 1) what arrives is reduced into the chunk, so after step n - 2
 * position pos holds chunk pos fully reduced; during the all-gather steps (s >= n - 1) what arrives
 * is final and only stored. The chunk received at step s is the one sent at step s + 1.
 *
 * A message is one segment: message i carries segment i % nseg of step first + i / nseg. Segment k
 * of the next step is the segment just received, so message i + nseg leaves as soon as message i
 * has arrived and been reduced: reduction of one segment overlaps the transfer of the others.
 * Every rank processes each direction's messages in order, i = 0, 1, ...: message i once it has
 * arrived and the send whose slot message i + nseg reuses has left. All that this waits for was
 * posted by every rank for messages before i, so the ring cannot deadlock. The two directions move
 * on independently, in one wait (advance()): waiting for message i of both before either went on
 * held each rank back while its slower link caught up, and 4 ranks on 2 cores switched between
 * spinning ranks 34 times a call at 1 MiB, against 3 for the mesh (the time fell to 0.8x once
 * apart: docs/perf/notes.md, core/algo/ring_pipeline.c). Receives are posted W messages ahead and
 * before any send, into a ring of W scratch slots (reduce-scatter, bf16 wire) or straight into
 * place (all-gather). W is a whole step (nseg), at least TETHER__WINDOW: the left neighbour sends
 * message i + nseg once it has processed message i, so with fewer receives posted its frames would
 * arrive before their receive and wait in the socket, or in a heap copy on a forwarding endpoint.
 *
 * With two directions (size > 2) each runs this on its own half of the data, at the same time:
 * every rank sends on both of its ring links and receives on both. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/algo/algo.h"
#include "core/reduce.h"

/* One direction's moving parts. */
typedef struct ring_lane {
    const tether__ring_dir *dir;
    char *scratch;       /* window receive slots */
    char *stage;         /* bf16 wire: one bfloat16 copy per send slot */
    tether__req **recvs; /* window */
    tether__req **sends; /* send_slots */
    size_t next;         /* the next message to process */
} ring_lane;

typedef struct ring_ctx {
    tether_group *g;
    const tether__ring_plan *p;
    tether__wire w;
    int n;
    size_t nseg;    /* segments per chunk */
    size_t total;   /* messages per direction */
    size_t seg_max; /* elements in the largest segment */
    size_t window;  /* receives posted ahead: max(nseg, TETHER__WINDOW) */
    /* nseg + TETHER__WINDOW: a send slot is reused TETHER__WINDOW iterations later */
    size_t send_slots;
    ring_lane lane[2];
} ring_ctx;

int tether__ring_rank_at(int n, int d, int j)
{
    return d == 0 ? tether__mod(j, n) : tether__mod(n - j, n);
}

int tether__ring_plan_init(tether_group *g, tether__ring_plan *p)
{
    int n = g->size;
    memset(p, 0, sizeof *p);
    p->ndirs = n > 2 ? 2 : 1; /* with two ranks both directions are the same link */
    p->spans = tether__scratch(g, sizeof *p->spans * 2 * (size_t)n, "ring chunk table");
    if (!p->spans)
        return TETHER_ENOMEM;
    memset(p->spans, 0, sizeof *p->spans * 2 * (size_t)n);
    for (int d = 0; d < p->ndirs; d++) {
        tether__ring_dir *dir = &p->dir[d];
        dir->pos = d == 0 ? g->rank : tether__mod(n - g->rank, n);
        dir->to = tether__ring_rank_at(n, d, dir->pos + 1);
        dir->from = tether__ring_rank_at(n, d, dir->pos - 1);
        dir->chunks = p->spans + (size_t)d * (size_t)n;
    }
    return TETHER_OK;
}

void tether__ring_plan_free(tether_group *g, tether__ring_plan *p)
{
    tether__scratch_free(g, p->spans);
    p->spans = NULL;
}

/* Where message i of a lane sits: its global step, its chunk, and the segment's element range. */
static const tether__span *locate(const ring_ctx *x, const ring_lane *l, size_t i, int sending,
                                  int *step, size_t *off, size_t *len)
{
    *step = x->p->first_step + (int)(i / x->nseg);
    int c = tether__mod(l->dir->pos - (sending ? 1 : 2) - *step, x->n);
    const tether__span *chunk = &l->dir->chunks[c];
    tether__part(chunk->len, x->nseg, i % x->nseg, off, len);
    return chunk;
}

static char *scratch_slot(const ring_ctx *x, const ring_lane *l, size_t i)
{
    return l->scratch + (i % x->window) * x->seg_max * x->w.wsize;
}

static int post_recv(ring_ctx *x, ring_lane *l, size_t i)
{
    int step;
    size_t off, len;
    const tether__span *chunk = locate(x, l, i, 0, &step, &off, &len);
    int in_place = step >= x->n - 1 && !x->w.bf16; /* final data, same format: store directly */
    void *into = in_place ? tether__at(chunk->dst, off * x->w.esize) : scratch_slot(x, l, i);
    return tether__irecv(x->g, l->dir->from, into, len * x->w.wsize, (uint32_t)i,
                         &l->recvs[i % x->window]);
}

static int post_send(ring_ctx *x, ring_lane *l, size_t j)
{
    int step;
    size_t off, len;
    const tether__span *chunk = locate(x, l, j, 1, &step, &off, &len);
    /* the first step sends untouched input; later steps send what an earlier step produced */
    const char *data =
        tether__at(step == x->p->first_step ? chunk->src : chunk->dst, off * x->w.esize);
    size_t slot = j % x->send_slots;
    void *stage = l->stage ? l->stage + slot * x->seg_max * x->w.wsize : NULL;
    const void *bytes = tether__wire_pack(&x->w, data, stage, len);
    return tether__isend(x->g, l->dir->to, bytes, len * x->w.wsize, (uint32_t)j, &l->sends[slot]);
}

/* Message i has arrived: reduce it into its chunk (reduce-scatter) or unpack it (bf16 all-gather).
 */
static int process(ring_ctx *x, ring_lane *l, size_t i)
{
    int step;
    size_t off, len, es = x->w.esize;
    const tether__span *chunk = locate(x, l, i, 0, &step, &off, &len);
    char *dst = tether__at(chunk->dst, off * es);
    if (step >= x->n - 1) {
        if (x->w.bf16)
            tether__wire_unpack(&x->w, dst, scratch_slot(x, l, i), len);
        return TETHER_OK;
    }
    /* out of place, the first touch of this chunk reads the input */
    TRY(tether__wire_reduce_from(&x->w, dst, chunk->src + off * es, scratch_slot(x, l, i), len));
    if (step == x->n - 2 && x->p->round_final) /* final: hold exactly what the others will get */
        tether__round_to_bf16((float *)dst, len);
    return TETHER_OK;
}

/* The wait's tester: move every lane on as far as its messages allow, each lane on its own (a lane
 * that waits on a slow neighbour does not hold back the other direction). Message i of a lane is
 * processed once it has arrived and the send whose slot message i + nseg reuses has left; then the
 * receive W ahead is posted and message i + nseg sent. How many messages are still to process. */
static int advance(void *arg, int *progress)
{
    ring_ctx *x = arg;
    const size_t W = x->window, T = x->total, S = x->send_slots;
    size_t left = 0;
    for (int d = 0; d < x->p->ndirs; d++) {
        ring_lane *l = &x->lane[d];
        while (l->next < T) {
            size_t i = l->next, next = i + x->nseg; /* the send it lets go */
            int pending = tether__testall(x->g, &l->recvs[i % W], 1, progress);
            if (pending == 0 && next < T && next >= S)
                pending = tether__testall(x->g, &l->sends[next % S], 1, progress);
            if (pending < 0)
                return pending;
            if (pending)
                break;
            TRY(process(x, l, i));
            if (i + W < T)
                TRY(post_recv(x, l, i + W));
            if (next < T)
                TRY(post_send(x, l, next));
            l->next++;
            *progress = 1;
        }
        left += T - l->next;
    }
    return left > INT_MAX ? INT_MAX : (int)left;
}

static int iterate(ring_ctx *x)
{
    const size_t W = x->window, T = x->total, nseg = x->nseg, S = x->send_slots;
    const int nl = x->p->ndirs;
    for (size_t i = 0; i < T && i < W; i++)
        for (int d = 0; d < nl; d++)
            TRY(post_recv(x, &x->lane[d], i));
    for (size_t j = 0; j < T && j < nseg; j++)
        for (int d = 0; d < nl; d++)
            TRY(post_send(x, &x->lane[d], j));
    TRY(tether__wait_until(x->g, advance, x));
    for (int d = 0; d < nl; d++)
        TRY(tether__waitall(x->g, x->lane[d].sends, (int)S));
    return TETHER_OK;
}

static int lanes_alloc(ring_ctx *x)
{
    for (int d = 0; d < x->p->ndirs; d++) {
        ring_lane *l = &x->lane[d];
        l->dir = &x->p->dir[d];
        l->scratch =
            tether__scratch(x->g, x->window * x->seg_max * x->w.wsize, "ring receive slots");
        /* the requests of both: window receives, then send_slots sends */
        l->recvs = tether__scratch(x->g, (x->window + x->send_slots) * sizeof *l->recvs,
                                   "ring request slots");
        if (!l->scratch || !l->recvs)
            return TETHER_ENOMEM;
        memset(l->recvs, 0, (x->window + x->send_slots) * sizeof *l->recvs);
        l->sends = l->recvs + x->window;
        if (x->w.bf16) {
            l->stage =
                tether__scratch(x->g, x->send_slots * x->seg_max * x->w.wsize, "ring bf16 staging");
            if (!l->stage)
                return TETHER_ENOMEM;
        }
    }
    return TETHER_OK;
}

int tether__ring_run(tether_group *g, const tether__coll *c, const tether__ring_plan *p)
{
    ring_ctx x = {.g = g, .p = p, .w = tether__wire_of(c), .n = g->size};
    size_t chunk_max = 0;
    for (int d = 0; d < p->ndirs; d++)
        for (int j = 0; j < g->size; j++)
            if (p->dir[d].chunks[j].len > chunk_max)
                chunk_max = p->dir[d].chunks[j].len;
    x.nseg = tether__nsegments(chunk_max, x.w.wsize, TETHER__SEG_BYTES);
    x.seg_max = (chunk_max + x.nseg - 1) / x.nseg;
    x.total = (size_t)(p->last_step - p->first_step) * x.nseg;
    x.window = x.nseg > TETHER__WINDOW ? x.nseg : TETHER__WINDOW;
    x.send_slots = x.nseg + TETHER__WINDOW;
    int rc = lanes_alloc(&x);
    if (rc == TETHER_OK)
        rc = tether__algo_abort(g, iterate(&x));
    for (int d = 0; d < p->ndirs; d++) {
        tether__scratch_free(g, x.lane[d].scratch);
        tether__scratch_free(g, x.lane[d].stage);
        tether__scratch_free(g, x.lane[d].recvs);
    }
    return rc;
}
