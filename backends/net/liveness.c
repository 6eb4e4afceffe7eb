/* backends/net/liveness.c - the heartbeats' verdict (liveness.h). */
#include "liveness.h"

#include "backends/net/socket.h"
#include "core/errors.h"

void tether__liveness_sample(const tether__liveness *lv, void *ep, int size,
                             tether__heartbeat *beat, int64_t now_ms)
{
    for (int p = 0; p < size; p++) {
        uint64_t bytes;
        if (lv->arrived(ep, p, &bytes))
            tether__heartbeat_note(beat, p, bytes, now_ms);
    }
}

int tether__liveness_check(const tether__liveness *lv, const tether__liveness_ep *e)
{
    char why[TETHER__ERRMSG_MAX];
    int64_t now = tether__net_now_ms();
    void *ep = e->ep;
    pthread_mutex_lock(e->mu);
    int look = !*e->err && tether__heartbeat_due(e->beat, now); /* a break is test()'s */
    if (look) {
        tether__liveness_sample(lv, ep, e->size, e->beat, now);
        /* read what the sockets hold, so heartbeats never fill one during a long wait; the count
         * above saw them where they were */
        lv->drain(ep);
    }
    for (int p = 0; look && p < e->size && !*e->err; p++) {
        const char *where = lv->silence_fails(ep, p);
        if (where && tether__heartbeat_silent(e->beat, p, where, now, why, sizeof why))
            lv->fail(ep, why);
    }
    int rc = look && *e->err ? tether__fail(*e->err, "%s", e->errmsg) : TETHER_OK;
    pthread_mutex_unlock(e->mu);
    return rc;
}
