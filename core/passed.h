/* core/passed.h - the collective calls this rank has passed on each of its groups, for the
 * transports' rule on stale messages.
 *
 * The calls of a group run one after another on each rank, and a rank finishes call k only after
 * it has taken every message of k meant for it. So a collective message of group g and call k that
 * arrives once this rank has finished k, or that still waits unclaimed then, is one no call of this
 * rank will ever take: the ranks disagreed on an earlier collective (two roots of one broadcast,
 * which exchange nothing; a root that sends a call its receivers never make). Kept, such messages
 * would pile up call after call, unseen, in a loop that only broadcasts; so the transport breaks
 * the endpoint with TETHER_EMISMATCH instead (core/transport.h, track), and its break frees them.
 * Only this rank's own progress judges: a message of call k that a slow receiver takes while its
 * sender is already in k + 1 is not stale. Point-to-point messages (TETHER__TAG_P2P) have counters
 * of their own and are never stale here; a child group has an id of its own and numbers its calls
 * from 0; a group this rank has made no call on yet (a child a peer formed first) judges nothing.
 */
#ifndef TETHER_CORE_PASSED_H
#define TETHER_CORE_PASSED_H

#include <stddef.h>
#include <stdint.h>

#include "transport.h"

/* tether__passed, one per world, is declared in transport.h */
typedef struct tether__passed_group tether__passed_group; /* one group's record in it */

/* NULL when out of memory (then nothing is judged). */
tether__passed *tether__passed_new(void);
void tether__passed_free(tether__passed *p);

/* Group id has finished every collective call before seq (seqs wrap): called after each call that
 * succeeded. *rec is the group's record, made on its first call (left NULL when out of memory:
 * nothing is judged for the group). p may be NULL (a transport without track). */
void tether__passed_set(tether__passed *p, tether__passed_group **rec, uint32_t id, uint32_t seq);
/* The group's record goes with the group (rec may be NULL). */
void tether__passed_drop(tether__passed *p, tether__passed_group *rec);

/* 1 if tag, from world rank peer, is a collective message of a call this rank has passed; why
 * then says so, for the TETHER_EMISMATCH. Else 0 (p NULL too). Safe from any thread. */
int tether__passed_stale(tether__passed *p, tether__tag tag, int peer, char *why, size_t why_len);

/* When a transport looks again at the messages it keeps: at a post, once some call is over since
 * the last look (not on every post). A rank that receives nothing (a broadcast's root, call after
 * call) reads nothing either: a transport leaves bytes no receive wants where they are (a socket,
 * a completion queue), so the messages of a rank that disagrees, or its abort, would wait unread
 * while every call returns TETHER_OK. So after TETHER__PASSED_QUIET such calls in a row it reads
 * what waits first (one look in so many calls of a root, none for a rank that receives), and at
 * most once in TETHER__PASSED_DRAIN_US: a read is a system call per socket, and a root of small
 * broadcasts in a loop, reading every third call, spent a third of its time there (sockets, N =
 * 4, 8 B: 7.9 us a call, 5.3 without the reads; measured: docs/perf/notes.md, core/passed.h). The
 * interval runs on the coarse clock (tether__coarse_us), whose read costs the root no more than a
 * few instructions. A disagreement then shows within a tick of it (1-4 ms) and three calls. */
#define TETHER__PASSED_QUIET 3
#define TETHER__PASSED_DRAIN_US 1000
typedef struct tether__passed_seen {
    uint64_t moves;     /* p's moves at the last look */
    uint64_t recvs;     /* the transport's receives posted by then */
    int quiet;          /* looks in a row with no receive posted between them */
    int64_t drained_us; /* when the last look that read what waits was (0: none yet) */
} tether__passed_seen;
typedef enum {
    TETHER__PASSED_NONE,  /* no call over since the last look */
    TETHER__PASSED_SWEEP, /* look at the kept messages (tether__rxq_stale) */
    TETHER__PASSED_DRAIN, /* read what waits unread, then look */
} tether__passed_action;
/* What to do at a post, given the receives the transport has posted so far (updates *s). */
tether__passed_action tether__passed_look(tether__passed *p, tether__passed_seen *s,
                                          uint64_t recvs);

#endif
