/* backends/net/endpoint.h - what every backend's endpoint keeps alike: its first failure, which
 * every later call reports (sticky), and the list of its live requests, which close() frees. */
#ifndef TETHER_NET_ENDPOINT_H
#define TETHER_NET_ENDPOINT_H

#include <stdarg.h>
#include <stdint.h>

#include "core/errors.h"

/* Record a failure unless one is recorded already (the first wins): *err = code and msg (of
 * TETHER_ERRMSG_MAX bytes) from fmt, logged naming backend. 1 when this call recorded it. Caller
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
/* The peers the live requests of head are with, as a bitmap of (size + 7) / 8 bytes: on whom a
 * waiting rank waits (core/waitstate.h). */
void tether__net_live_peers(const tether__net_live *head, uint8_t *bits, int size);

#endif
