/* backends/net/endpoint.c - an endpoint's first failure and live requests (endpoint.h). */
#include "endpoint.h"

#include <stdio.h>

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

void tether__net_live_add(tether__net_live **head, tether__net_live *r)
{
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
