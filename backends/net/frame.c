/* backends/net/frame.c - frame header encoding, stripe arithmetic and tag matching (no sockets). */
#include "frame.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h> /* sysconf */

#include "core/wire.h"

void tether__frame_encode(const tether__frame *f, unsigned char out[TETHER__FRAME_SIZE])
{
    tether__put_u32(out + 0, f->tag.group);
    tether__put_u32(out + 4, f->tag.seq);
    tether__put_u32(out + 8, f->tag.step);
    tether__put_u32(out + 12, f->tag.sig);
    tether__put_u64(out + 16, f->len);
    tether__put_u32(out + 24, f->type);
    tether__put_u32(out + 28, (uint32_t)f->code);
}

int tether__frame_decode(const unsigned char in[TETHER__FRAME_SIZE], tether__frame *f)
{
    f->tag.group = tether__get_u32(in + 0);
    f->tag.seq = tether__get_u32(in + 4);
    f->tag.step = tether__get_u32(in + 8);
    f->tag.sig = tether__get_u32(in + 12);
    f->len = tether__get_u64(in + 16);
    f->type = tether__get_u32(in + 24);
    f->code = (int32_t)tether__get_u32(in + 28);
    switch (f->type) {
    case TETHER__FRAME_DATA:
    case TETHER__FRAME_ABORT:
    case TETHER__FRAME_BYE:
    case TETHER__FRAME_ROUTED:
    case TETHER__FRAME_ROUTED_MORE:
    case TETHER__FRAME_LEAVE:
    case TETHER__FRAME_HEARTBEAT:
    case TETHER__FRAME_CMA_OFFER:
    case TETHER__FRAME_CMA_ANSWER:
    case TETHER__FRAME_CMA_DATA:
    case TETHER__FRAME_CMA_DONE:
    case TETHER__FRAME_ACK:
    case TETHER__FRAME_FAILOVER:
    case TETHER__FRAME_TUNNEL:
    case TETHER__FRAME_SWITCH:
    case TETHER__FRAME_SHM_OFFER:
    case TETHER__FRAME_RINGS_ALL:
    case TETHER__FRAME_SHM_ON:
        return 0;
    }
    return -1;
}

int tether__stripe(uint64_t len, int nlinks, int link, uint64_t *off, uint64_t *n)
{
    /* equal shares rounded down to 4 KiB so stripes start page-aligned; the last link takes the
     * rest. Below TETHER__STRIPE_MIN the whole message goes on link 0. */
    uint64_t share = nlinks > 1 ? (len / (uint64_t)nlinks) & ~(uint64_t)4095 : 0;
    if (len < TETHER__STRIPE_MIN || share == 0) {
        *off = 0;
        *n = link == 0 ? len : 0;
        return link == 0;
    }
    *off = share * (uint64_t)link;
    *n = link == nlinks - 1 ? len - *off : share;
    return 1;
}

uint64_t tether__route_chunks(uint64_t len)
{
    return len ? (len - 1) / TETHER__ROUTE_CHUNK + 1 : 1;
}

uint64_t tether__route_first(uint64_t len)
{
    return len < TETHER__ROUTE_CHUNK ? len : TETHER__ROUTE_CHUNK;
}

int tether__route_next_ok(uint64_t msglen, uint64_t got, uint64_t n)
{
    return got < msglen && n == tether__route_first(msglen - got);
}

void tether__rxq_push(tether__rxq *q, tether__rxmsg *m)
{
    m->next = NULL;
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
}

static void rxq_unlink(tether__rxq *q, tether__rxmsg *prev, tether__rxmsg *m)
{
    if (prev)
        prev->next = m->next;
    else
        q->head = m->next;
    if (q->tail == m)
        q->tail = prev;
    m->next = NULL;
}

tether__match tether__rxq_match(tether__rxq *q, tether__tag tag, uint64_t msglen, tether__rxmsg **m)
{
    tether__rxmsg *found = NULL, *found_prev = NULL, *prev = NULL;
    for (tether__rxmsg *x = q->head; x; prev = x, x = x->next) {
        if (x->tag.group != tag.group || x->tag.seq != tag.seq)
            continue;
        if (x->tag.sig != tag.sig && (x->tag.step == tag.step || !(tag.seq & TETHER__TAG_P2P))) {
            *m = x;
            return TETHER__MATCH_SIG;
        }
        if (!found && x->tag.step == tag.step) {
            found = x;
            found_prev = prev;
        }
    }
    *m = found;
    if (!found)
        return TETHER__MATCH_NONE;
    if (found->msglen != msglen)
        return TETHER__MATCH_LEN;
    rxq_unlink(q, found_prev, found);
    return TETHER__MATCH_OK;
}

/* Allocation granule of cached blocks, so segments of slightly different sizes share blocks. */
#define RXCACHE_GRAIN ((uint64_t)64 << 10)

tether__rxmsg *tether__rxcache_get(tether__rxcache *c, uint64_t len)
{
    int best = -1;
    for (int i = 0; i < TETHER__RXCACHE_SLOTS; i++)
        if (c->slot[i] && c->slot[i]->cap >= len &&
            (best < 0 || c->slot[i]->cap < c->slot[best]->cap))
            best = i;
    tether__rxmsg *m;
    uint64_t cap;
    if (best >= 0) {
        m = c->slot[best];
        c->slot[best] = NULL;
        cap = m->cap;
    } else {
        cap = len <= TETHER__RXCACHE_KEEP_MAX
                  ? (len + RXCACHE_GRAIN - 1) / RXCACHE_GRAIN * RXCACHE_GRAIN
                  : len;
        if (cap > SIZE_MAX - sizeof *m - 1 || !(m = malloc(sizeof *m + (size_t)cap + 1)))
            return NULL;
    }
    memset(m, 0, sizeof *m);
    m->buf = (unsigned char *)(m + 1);
    m->len = len;
    m->cap = cap;
    m->heap = 1;
    return m;
}

/* The least a lazy buffer grows to at once. */
#define LAZY_MIN ((uint64_t)1 << 20)

tether__rxmsg *tether__rxcache_get_lazy(tether__rxcache *c, uint64_t len)
{
    if (len <= TETHER__RXCACHE_KEEP_MAX)
        return tether__rxcache_get(c, len);
    tether__rxmsg *m = tether__rxcache_get(c, 0);
    if (m) {
        m->buf = NULL;
        m->len = len;
        m->lazy = 1;
    }
    return m;
}

int tether__rxmsg_reserve(tether__rxmsg *m, uint64_t *n)
{
    if (!m->lazy || m->got + *n <= m->room)
        return 0;
    if (m->got == m->room) {
        uint64_t grow = m->room ? 2 * m->room : LAZY_MIN;
        if (grow > m->len)
            grow = m->len;
        if ((uint64_t)(size_t)grow != grow)
            return -1;
        unsigned char *p = realloc(m->buf, (size_t)grow);
        if (!p)
            return -1;
        m->buf = p;
        m->room = grow;
    }
    if (m->got + *n > m->room)
        *n = m->room - m->got;
    return 0;
}

void tether__rxmsg_redirect(tether__rxmsg *m, unsigned char *buf)
{
    if (m->lazy)
        free(m->buf);
    m->lazy = 0;
    m->buf = buf;
}

void tether__rxcache_put(tether__rxcache *c, tether__rxmsg *m)
{
    int smallest = -1;
    if (m->lazy)
        free(m->buf);
    if (m->cap <= TETHER__RXCACHE_KEEP_MAX) {
        for (int i = 0; i < TETHER__RXCACHE_SLOTS; i++) {
            if (!c->slot[i]) {
                c->slot[i] = m;
                return;
            }
            if (smallest < 0 || c->slot[i]->cap < c->slot[smallest]->cap)
                smallest = i;
        }
        if (c->slot[smallest]->cap < m->cap) { /* full: keep the larger blocks */
            tether__rxmsg *out = c->slot[smallest];
            c->slot[smallest] = m;
            m = out;
        }
    }
    free(m);
}

void tether__rxcache_clear(tether__rxcache *c)
{
    for (int i = 0; i < TETHER__RXCACHE_SLOTS; i++) {
        free(c->slot[i]);
        c->slot[i] = NULL;
    }
}

void tether__rxcache_note(tether__rxcache *c, uint64_t len)
{
    if (len > c->largest)
        c->largest = len;
}

/* Half the machine's memory (4 GiB where the system does not say). */
static uint64_t half_memory(void)
{
    long pages = -1, page = -1;
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
    pages = sysconf(_SC_PHYS_PAGES);
    page = sysconf(_SC_PAGESIZE);
#endif
    if (pages <= 0 || page <= 0)
        return (uint64_t)4 << 30;
    return (uint64_t)pages / 2 * (uint64_t)page;
}

uint64_t tether__rxcache_limit(const tether__rxcache *c, tether__tag tag)
{
    uint64_t learned = c->largest > UINT64_MAX / 2 ? UINT64_MAX : 2 * c->largest;
    uint64_t limit = learned > TETHER__UNEXPECTED_FLOOR ? learned : TETHER__UNEXPECTED_FLOOR;
    if (tag.seq & TETHER__TAG_P2P) {
        uint64_t half = half_memory();
        return half > limit ? half : limit;
    }
    return limit;
}

int tether__rxcache_admits(const tether__rxcache *c, uint64_t len, tether__tag tag)
{
    return len <= tether__rxcache_limit(c, tag);
}

int tether__rxq_holds_msg(const tether__rxq *q, const tether__rxmsg *m)
{
    for (const tether__rxmsg *x = q->head; x; x = x->next)
        if (x == m)
            return 1;
    return 0;
}

void tether__rxq_remove(tether__rxq *q, tether__rxmsg *m)
{
    for (tether__rxmsg *x = q->head, *prev = NULL; x; prev = x, x = x->next)
        if (x == m) {
            rxq_unlink(q, prev, m);
            return;
        }
}

int tether__rxq_holds(const tether__rxq *q, tether__tag tag)
{
    for (const tether__rxmsg *m = q->head; m; m = m->next)
        if (m->tag.group == tag.group && m->tag.seq == tag.seq && m->tag.step == tag.step)
            return 1;
    return 0;
}

int tether__rxq_stale(const tether__rxq *q, tether__passed *p, int peer, char *why, size_t why_len)
{
    for (const tether__rxmsg *m = q->head; m; m = m->next)
        if (tether__passed_stale(p, m->tag, peer, why, why_len))
            return 1;
    return 0;
}
