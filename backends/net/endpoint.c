/* backends/net/endpoint.c - an endpoint's first failure and live requests (endpoint.h). */
#include "endpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

int tether__net_fail_first(int *err, char *msg, const char *backend, int code, const char *fmt,
                           va_list ap)
{
    if (*err)
        return 0;
    vsnprintf(msg, TETHER__ERRMSG_MAX, fmt, ap);
    *err = code;
    TLOG_INFO("%s endpoint broken: %s: %s", backend, tether_err_name(code), msg);
    return 1;
}

void tether__net_live_add(tether__net_live **head, tether__net_live *r, int peer)
{
    r->peer = peer;
    r->prev = NULL;
    r->next = *head;
    if (*head)
        (*head)->prev = r;
    *head = r;
}

void tether__net_live_remove(tether__net_live **head, tether__net_live *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        *head = r->next;
    if (r->next)
        r->next->prev = r->prev;
}

/* The peers the live requests of head are with, as a bitmap of (size + 7) / 8 bytes: on whom a
 * waiting rank waits. */
static void live_peers(const tether__net_live *head, uint8_t *bits, int size)
{
    memset(bits, 0, ((size_t)size + 7) / 8);
    for (const tether__net_live *r = head; r; r = r->next)
        if (r->peer >= 0 && r->peer < size)
            bits[r->peer / 8] |= (uint8_t)(1u << (r->peer % 8));
}

void tether__net_records_watch(tether__net_records *r, tether__waitstate *ws, int size, size_t cap)
{
    r->pending = calloc(1, ((size_t)size + 7) / 8);
    r->blob = malloc(cap);
    r->ws = r->pending && r->blob ? ws : NULL;
    r->cap = cap;
}

size_t tether__net_records_pack(tether__net_records *r, const tether__net_live *head, int size,
                                uint64_t moved, size_t at)
{
    if (!r->ws)
        return 0;
    live_peers(head, r->pending, size);
    return tether__ws_pack(r->ws, r->pending, moved, r->blob + at, r->cap - at);
}

void tether__net_records_free(tether__net_records *r)
{
    free(r->pending);
    free(r->blob);
}
