/* core/passed.c - the calls each group of this rank has passed (core/passed.h): a short list of
 * records, one per group that has made a collective call, read by the transports' threads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "passed.h"

struct tether__passed_group {
    tether__passed_group *next;
    uint32_t id;
    _Atomic uint32_t seq; /* every call before it is over */
};

struct tether__passed {
    pthread_mutex_t lock; /* guards the list; a record's seq is atomic */
    tether__passed_group *head;
    _Atomic uint64_t moves; /* calls finished so far, on any group */
};

tether__passed *tether__passed_new(void)
{
    tether__passed *p = calloc(1, sizeof *p);
    if (p)
        pthread_mutex_init(&p->lock, NULL);
    return p;
}

void tether__passed_free(tether__passed *p)
{
    if (!p)
        return;
    while (p->head) {
        tether__passed_group *r = p->head;
        p->head = r->next;
        free(r);
    }
    pthread_mutex_destroy(&p->lock);
    free(p);
}

void tether__passed_set(tether__passed *p, tether__passed_group **rec, uint32_t id, uint32_t seq)
{
    if (!p)
        return;
    if (!*rec && (*rec = calloc(1, sizeof **rec)) != NULL) {
        (*rec)->id = id;
        pthread_mutex_lock(&p->lock);
        (*rec)->next = p->head;
        p->head = *rec;
        pthread_mutex_unlock(&p->lock);
    }
    if (*rec) {
        atomic_store_explicit(&(*rec)->seq, seq, memory_order_release);
        atomic_fetch_add_explicit(&p->moves, 1, memory_order_release);
    }
}

void tether__passed_drop(tether__passed *p, tether__passed_group *rec)
{
    if (!p || !rec)
        return;
    pthread_mutex_lock(&p->lock);
    for (tether__passed_group **pp = &p->head; *pp; pp = &(*pp)->next)
        if (*pp == rec) {
            *pp = rec->next;
            break;
        }
    pthread_mutex_unlock(&p->lock);
    free(rec);
}

int tether__passed_stale(tether__passed *p, tether__tag tag, int peer, char *why, size_t why_len)
{
    if (!p || (tag.seq & (TETHER__TAG_P2P | TETHER__TAG_CTRL)))
        return 0;
    int found = 0;
    uint32_t seq = 0;
    pthread_mutex_lock(&p->lock);
    for (const tether__passed_group *r = p->head; r; r = r->next)
        if (r->id == tag.group) {
            found++;
            seq = atomic_load_explicit(&r->seq, memory_order_acquire);
        }
    pthread_mutex_unlock(&p->lock);
    /* Two groups of this process with one id (a hash collision) cannot tell whose call it is:
     * then nothing is judged, as before. A signed difference orders seqs across the wrap. */
    if (found != 1 || tether__tag_seq_diff(seq, tag.seq) <= 0)
        return 0;
    snprintf(why, why_len,
             "rank %d sent a message of call %u of group %08x that no call of this rank took "
             "(this rank has finished its calls up to %u of that group): the ranks disagree on an "
             "earlier collective (root, count, dtype or order)",
             peer, tag.seq, tag.group, (seq - 1) & TETHER__TAG_SEQ_MASK);
    return 1;
}

tether__passed_action tether__passed_look(tether__passed *p, tether__passed_seen *s, uint64_t recvs)
{
    if (!p)
        return TETHER__PASSED_NONE;
    uint64_t moves = atomic_load_explicit(&p->moves, memory_order_acquire);
    if (moves == s->moves)
        return TETHER__PASSED_NONE;
    s->moves = moves;
    s->quiet = recvs == s->recvs ? s->quiet + 1 : 0;
    s->recvs = recvs;
    if (s->quiet < TETHER__PASSED_QUIET)
        return TETHER__PASSED_SWEEP;
    int64_t now = tether__coarse_us(); /* only here: a rank that receives reads no clock */
    if (s->drained_us && now - s->drained_us < TETHER__PASSED_DRAIN_US)
        return TETHER__PASSED_SWEEP; /* still quiet: the first look past the interval reads */
    s->quiet = 0;
    s->drained_us = now;
    return TETHER__PASSED_DRAIN;
}
