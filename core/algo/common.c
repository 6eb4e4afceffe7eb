/* core/algo/common.c - helpers every algorithm uses: segment counts, scratch memory, the wire
 * format. */
#include <stdlib.h>
#include <string.h>

#include "core/algo/algo.h"
#include "core/reduce.h"

size_t tether__nsegments(size_t elems, size_t esize, size_t seg_bytes)
{
    size_t bytes = elems * esize;
    size_t n = (bytes + seg_bytes - 1) / seg_bytes;
    return n == 0 ? 1 : n > TETHER__MAX_SEGS ? TETHER__MAX_SEGS : n;
}

void *tether__scratch(tether_group *g, size_t bytes, const char *what)
{
    void *p = tether__pool_get(&g->scratch, bytes);
    if (!p)
        tether__fail(TETHER_ENOMEM, "%s: out of memory for %zu bytes of %s in %s",
                     TETHER__RANK_TEXT(g, g->rank), bytes, what, g->cur_name);
    return p;
}

void tether__scratch_free(tether_group *g, void *p)
{
    tether__pool_put(&g->scratch, p);
}

void *tether__scratch_small(tether_group *g, tether__small *small, size_t bytes, const char *what)
{
    return bytes <= sizeof small->space ? (void *)small->space : tether__scratch(g, bytes, what);
}

void tether__scratch_release(tether_group *g, void *p, const tether__small *small)
{
    if (p != (const void *)small->space)
        tether__scratch_free(g, p);
}

tether__req **tether__req_slots(tether_group *g, tether__req_local *local, size_t n,
                                const char *what)
{
    tether__req **slots = n <= TETHER__LOCAL_REQS ? local->r : NULL;
    if (!slots)
        slots = tether__scratch(g, n * sizeof *slots, what);
    if (slots && n)
        memset(slots, 0, n * sizeof *slots);
    return slots;
}

void tether__req_slots_free(tether_group *g, tether__req **slots, const tether__req_local *local)
{
    if (slots != local->r)
        tether__scratch_free(g, slots);
}

int tether__algo_abort(tether_group *g, int rc)
{
    return rc < 0 ? tether__group_break(g, rc) : rc;
}

tether__wire tether__wire_of(const tether__coll *c)
{
    tether__wire w = {.dt = c->dt, .op = c->op, .esize = c->esize, .wsize = c->esize, .bf16 = 0};
    if (c->wire_bf16 && c->dt == TETHER_FLOAT32) {
        w.bf16 = 1;
        w.wsize = sizeof(uint16_t);
    }
    return w;
}

const void *tether__wire_pack(const tether__wire *w, const void *data, void *stage, size_t n)
{
    if (!w->bf16)
        return data;
    tether__floats_to_bf16(stage, data, n);
    return stage;
}

int tether__wire_reduce(const tether__wire *w, void *data, const void *msg, size_t n)
{
    if (!w->bf16)
        return tether__reduce(data, msg, n, w->dt, w->op);
    tether__reduce_bf16_into_f32(data, msg, n, w->op);
    return TETHER_OK;
}

/* Bytes copied per round of tether__wire_reduce_from: small enough that the reduction finds them
 * still in the L1 cache, so data is written once from the core's view instead of copied whole and
 * then read back (measured: docs/perf/notes.md, core/algo/common.c).
 * A multiple of 16 elements of any dtype, so the kernels' vector loops see no tail but the last. */
#define REDUCE_FROM_BLOCK ((size_t)8192)

int tether__wire_reduce_from(const tether__wire *w, void *data, const void *input, const void *msg,
                             size_t n)
{
    if (data == input)
        return tether__wire_reduce(w, data, msg, n);
    size_t step = REDUCE_FROM_BLOCK / w->esize;
    for (size_t i = 0; i < n; i += step) {
        size_t k = n - i < step ? n - i : step;
        memcpy(tether__at(data, i * w->esize), (const char *)input + i * w->esize, k * w->esize);
        TRY(tether__wire_reduce(w, tether__at(data, i * w->esize), (const char *)msg + i * w->wsize,
                                k));
    }
    return TETHER_OK;
}

void tether__wire_unpack(const tether__wire *w, void *data, const void *msg, size_t n)
{
    if (w->bf16)
        tether__bf16_to_floats(data, msg, n);
    else if (data != msg && n)
        memcpy(data, msg, n * w->esize);
}

int tether__wire_reduce_slots(const tether__wire *w, void *recv, const char *slots,
                              size_t slot_bytes, int n, size_t count)
{
    tether__wire_unpack(w, recv, slots, count);
    for (int q = 1; q < n; q++)
        TRY(tether__wire_reduce(w, recv, slots + (size_t)q * slot_bytes, count));
    if (w->bf16)
        tether__round_to_bf16((float *)recv, count);
    return TETHER_OK;
}

int tether__with_rank_slots(tether_group *g, const tether__coll *c, const char *what,
                            tether__slots_fn gather)
{
    size_t slot_bytes = tether__aligned(c->count * tether__wire_of(c).wsize);
    tether__small small;
    char *slots = tether__scratch_small(g, &small, (size_t)g->size * slot_bytes, what);
    if (!slots)
        return TETHER_ENOMEM;
    int rc = tether__algo_abort(g, gather(g, c, slots, slot_bytes));
    tether__scratch_release(g, slots, &small);
    return rc;
}
