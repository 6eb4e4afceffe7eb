/* backends/net/endpoint.h - what every backend's endpoint keeps alike: its first failure, which
 * every later call reports (sticky), and the list of its live requests, which close() frees. */
#ifndef TETHER_NET_ENDPOINT_H
#define TETHER_NET_ENDPOINT_H

#include <stdarg.h>
#include <stdint.h>

#include "core/errors.h"
#include "core/waitstate.h"

/* Record a failure unless one is recorded already (the first wins): *err = code and msg (of
 * TETHER__ERRMSG_MAX bytes) from fmt, logged naming backend. 1 when this call recorded it. Caller
 * serialises (the endpoint's mutex). */
int tether__net_fail_first(int *err, char *msg, const char *backend, int code, const char *fmt,
                           va_list ap);

/* The code a rank fails with when peer reported failing with code: a mismatch or a deadlock is
 * the same on every rank; any other failure is that peer's (TETHER_EPEER). */
static inline int tether__net_reported(int code)
{
    return code == TETHER_EMISMATCH || code == TETHER_EDEADLOCK ? code : TETHER_EPEER;
}

/* A live request's place in its endpoint's list: the first member of each backend's request. */
typedef struct tether__net_live {
    struct tether__net_live *prev, *next;
    int peer; /* the world rank it is with */
} tether__net_live;

void tether__net_live_add(tether__net_live **head, tether__net_live *r, int peer);
void tether__net_live_remove(tether__net_live **head, tether__net_live *r);
/* What an endpoint's heartbeats carry (core/waitstate.h): the records, and room for the bitmap of
 * the peers its live requests are with and for one heartbeat's records. Guarded by the endpoint's
 * lock. */
typedef struct tether__net_records {
    tether__waitstate *ws; /* NULL: the heartbeats carry no records */
    uint8_t *pending, *blob;
    size_t cap; /* bytes of blob */
} tether__net_records;

/* Keep ws for a world of size ranks, with room for cap bytes of heartbeat (the transport's watch);
 * out of memory, the heartbeats carry no records and waits go on without verdicts. */
void tether__net_records_watch(tether__net_records *r, tether__waitstate *ws, int size, size_t cap);
/* This rank's records for a heartbeat, at blob + at (the bytes before are the transport's header),
 * from the live requests of head and the endpoint's moved counter: the bytes, 0 when none kept. */
size_t tether__net_records_pack(tether__net_records *r, const tether__net_live *head, int size,
                                uint64_t moved, size_t at);
void tether__net_records_free(tether__net_records *r);

#endif
