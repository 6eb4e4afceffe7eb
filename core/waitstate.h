/* core/waitstate.h - what each rank of a world is doing, as the heartbeats tell it, and the two
 * verdicts a waiting rank draws from that, so that a call waits as long as its peers are alive and
 * could still answer, and no longer:
 *
 * - A deadlock: this rank waits, and every rank it waits on, directly or through others, waits
 *   too, none of them having moved a byte, finished a request or changed call for
 *   TETHER__WS_STABLE heartbeat periods and as many of its heartbeats. Nothing can change any more,
 * so each of them fails with TETHER_EDEADLOCK and a message naming a cycle among them ("rank 0
 * waits for rank 1 in recv (tag 7); rank 1 waits for rank 0 in recv (tag 3)").
 *   Where every rank of the cycle waits in one and the same collective, the program's order is
 *   right and data was lost on the way (a dead link): TETHER_ENET, "stalled inside one call".
 *   Where one waits in a collective that the rank it waits for has left for a later one of the
 *   same group, they disagreed on that call (a broadcast's roots): TETHER_EMISMATCH naming both.
 * - A peer this rank waits on failed its last call and has made none since, for a heartbeat
 *   period (time for a retry): this one fails with TETHER_EPEER and that peer's error.
 * A rank busy outside tether is not waiting, so ranks that wait for it wait as long as it takes.
 *
 * A rank waits on every peer it has a request pending with (the transport tells, from its live
 * requests: more than the waiting call may need, which only makes the verdict more careful) and,
 * while a receive from any source has claimed nothing, on every member of that group. A rank that
 * waits in one thread while another of its threads computes and will send later looks the same as
 * a stuck one: such a program sets TETHER_DEADLOCK=0 (docs/env.md).
 *
 * The transport carries this rank's record in its heartbeats, with every record it holds of the
 * others (so a ring's ranks, which hear only their neighbours, learn them all): a record with a
 * higher version than the one held replaces it. The records are bytes from an authenticated peer,
 * checked whole before any is taken. */
#ifndef TETHER_CORE_WAITSTATE_H
#define TETHER_CORE_WAITSTATE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tether__waitstate tether__waitstate;

/* Periods, and heartbeats repeating it, a waiting record must stay the same to count as stuck. */
#define TETHER__WS_STABLE 2
/* Largest record list a heartbeat carries (a larger world sends what fits, this rank's first). */
#define TETHER__WS_BLOB_MAX 8192
/* peer of a wait in a call with no one peer (a collective), and of a receive from any source */
#define TETHER__WS_GROUP (-1)
#define TETHER__WS_ANY (-2)

/* A new record table for world rank of size ranks whose heartbeats come every period_ms; NULL
 * when out of memory (the verdicts are then never reached: a wait goes on as without them). */
tether__waitstate *tether__ws_new(int rank, int size, int period_ms);
void tether__ws_free(tether__waitstate *ws);

/* Core: a thread starts sleeping in a wait in call seq of group (name "all_reduce", "recv", ...)
 * for peer (a world rank, TETHER__WS_GROUP or TETHER__WS_ANY) with p2p tag (-1: none); members
 * (n world ranks) is the group, waited on whole while peer is TETHER__WS_ANY. Every begin has
 * its end, with the same peer; progressed says whether the wait ended because something finished
 * (0 for a slice of a polling wait that ran out: its next slice must look the same). */
void tether__ws_wait_begin(tether__waitstate *ws, uint32_t group, uint32_t seq, const char *name,
                           int peer, int tag, const int *members, int n);
void tether__ws_wait_end(tether__waitstate *ws, int peer, int progressed);
/* Core: a wait made progress (a request finished): its record is not stuck. Lock-free. */
void tether__ws_progress(tether__waitstate *ws);
/* What a call's end left in the record, kept by the caller per group (tether_group's ws_end): a
 * later end of the same call with the same rc finds the record unchanged since without the lock. */
typedef struct tether__ws_end {
    uint64_t changes; /* the record's count of changes after it; 0: none yet */
    const char *name;
    int rc;
} tether__ws_end;

/* Core: a call on group ended with rc; a failure (text: its message) is told to the peers until
 * the next call ends well or waits. last is the group's tether__ws_end. */
void tether__ws_call_end(tether__waitstate *ws, tether__ws_end *last, uint32_t group,
                         const char *name, int rc, const char *text);
/* Core, from a wait with no progress for a heartbeat period: TETHER_OK, or TETHER_EDEADLOCK /
 * TETHER_EPEER / TETHER_ENET with why (naming the cycle, or the failed peer and its error). Cheap:
 * it looks at most four times a period. */
int tether__ws_verdict(tether__waitstate *ws, char *why, size_t why_len);

/* Transport, in its heartbeat thread: this rank's record (pending: a bitmap of the world ranks it
 * has requests pending with, (size + 7) / 8 bytes; moved: its counter of bytes moved) and the
 * records it holds of the others, into out (cap bytes): the bytes used, 0 when nothing fits. */
size_t tether__ws_pack(tether__waitstate *ws, const uint8_t *pending, uint64_t moved, uint8_t *out,
                       size_t cap);
/* Transport, when a heartbeat of world rank from brought records: take the newer ones. -1 when
 * the bytes are malformed (why says how; nothing taken), else 0. */
int tether__ws_merge(tether__waitstate *ws, int from, const uint8_t *in, size_t len, char *why,
                     size_t why_len);

#endif
