/* backends/net/endpoint.c - an endpoint's first failure and live requests (endpoint.h). */
#include "endpoint.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"

int tether__net_fail_first(int *err, char *msg, const char *backend, int code, const char *fmt,
                           va_list ap)
{
    if (*err)
        return 0;
    vsnprintf(msg, TETHER_ERRMSG_MAX, fmt, ap);
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

void tether__net_live_peers(const tether__net_live *head, uint8_t *bits, int size)
{
    memset(bits, 0, ((size_t)size + 7) / 8);
    for (const tether__net_live *r = head; r; r = r->next)
        if (r->peer >= 0 && r->peer < size)
            bits[r->peer / 8] |= (uint8_t)(1u << (r->peer % 8));
}
