/* backends/tcp/route.h - messages between ranks with no link: sent through a neighbour, passed on.
 *
 * The ring links each rank to its two neighbours only. A message to any other rank travels as
 * routed frames, one per chunk (frame.h), on link 0 towards it, the shorter way round (the ring
 * backend fills via); each rank on the way reads a chunk into a block of its own and queues it on,
 * in arrival order, so messages between a pair keep their order and their chunks stay in sequence
 * (the engine holds back a link whose chunks wait onward: TETHER__PASS_MAX). The destination
 * matches the first chunk against the receives posted for its origin with the usual tag, signature
 * and length checks, and joins the next ones to it. Routed messages are not striped: they are the
 * small traffic of trees and barriers, or point-to-point between distant ranks, while the
 * bandwidth collectives only talk to neighbours.
 *
 * These are the rules only: the engine asks where a frame goes and whether a leave notice is due
 * and does the sending itself; nothing here touches a link or calls the engine. */
#ifndef TETHER_TCP_ROUTE_H
#define TETHER_TCP_ROUTE_H

#include <stdint.h>

/* The routes of an endpoint whose links reach only some peers. */
typedef struct tether__routes {
    int rank, size;
    int *via;          /* per peer: the neighbour a message to it goes through (itself when
                          linked); NULL when every peer is linked */
    const int *nlinks; /* per peer: the engine's links to it */
    int leaves_seen;   /* leave notices received */
} tether__routes;

/* The peer whose link 0 a message to or from peer travels on first. */
int tether__route_hop(const tether__routes *rt, int peer);

typedef enum {
    TETHER__ROUTE_HERE,      /* for this rank: matched as if its origin had sent it straight here */
    TETHER__ROUTE_PASS,      /* for another rank: passed on, a chunk at a time */
    TETHER__ROUTE_MISPLACED, /* a routed frame this rank cannot place */
    TETHER__ROUTE_LINKED,    /* from a rank linked to this one, which never routes to it */
} tether__route_place;

/* Where a routed frame (either kind) with code (frame.h), arriving on link index of a neighbour,
 * goes. */
tether__route_place tether__route_arrived(const tether__routes *rt, int32_t code, int index);

/* The neighbour a frame passing through from neighbour from to dst goes on to, or -1 when that is
 * the way it came (the ranks disagree on the ring). */
int tether__route_onward(const tether__routes *rt, int from, int dst);

/* ---- leaving ----
 * A rank that closes may still be on the way of messages between ranks that have not finished
 * (the last round of a barrier, say), so it keeps passing frames on until no rank can send any
 * more. Each closing rank sends a leave notice to its neighbours; each rank passes a notice on
 * to its other neighbour unless that is the notice's origin, so every rank gets every other rank's
 * notice once from each side. A notice travels behind the frames its origin sent earlier, on the
 * same links, so once a rank holds them all nothing will pass through it again. */

/* A leave notice of origin came: 0 when it is well formed (then counted), -1 when not. */
int tether__route_left(tether__routes *rt, int origin);

/* The neighbours a notice of origin goes to next, from after + 1 on (start at -1): this rank's own
 * (from = -1) to every neighbour, another's to every neighbour but from and origin. -1 at the end.
 */
int tether__route_leave_next(const tether__routes *rt, int from, int origin, int after);

/* 1 once every other rank's notice came from every neighbour. */
int tether__route_all_left(const tether__routes *rt);

#endif
