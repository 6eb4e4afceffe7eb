/* backends/tcp/engine_rejoin.c - lanes that left are dialled again and switched back.
 *
 * An endpoint with a pair of several links (the ring's K links per neighbour) keeps its listeners
 * and its set-up plan, and runs one thread that sleeps until a lane leaves (engine_lane.c calls
 * ep->lane_out). Then, about once a second while a lane of it is out, the thread runs the set-up
 * again for those lanes alone (backends/net/setup.c with plan.redial): it dials the lanes this
 * rank opened at set-up, on the same address, and accepts those its peers opened, with the same
 * hello, token proof and settings, each try ending after REJOIN_TRY_MS. A socket that comes up is
 * handed to the engine under ep->mu (tether__tcp_lane_back), which switches the lane back to it
 * (engine_lane.c); the thread never touches a lane's stream. It never spins: it sleeps in the
 * set-up's poll() or on its condition variable, and close stops it within a try. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/net/socket.h"
#include "engine.h"
#include "engine_impl.h"
#include "engine_lane.h"
#include "engine_rejoin.h"

/* One try: how long the set-up waits for a link, and at least how long a try lasts. */
#define REJOIN_TRY_MS 1000

struct tether__tcp_rejoin {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    uint64_t asked, seen;  /* lanes that left (ep->lane_out), and the count the thread last saw */
    tether__net_plan plan; /* the set-up's, with its arrays */
    char token[TETHER__TOKEN_MAX];
    int nlisten;
    int *listen_fds;
    uint64_t *redial; /* per peer: the lanes this rank dials again (setup.h) */
};

/* ep->lane_out, with ep->mu held. */
static void lane_out(tether__tcp_ep *ep)
{
    struct tether__tcp_rejoin *r = ep->rejoin;
    pthread_mutex_lock(&r->mu);
    r->asked++;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* Which lanes are out: r->redial for those this rank dials; 1 in *accept when a peer dials one.
 * 0 when none is out (or ep is broken). */
static int wanted(tether__tcp_ep *ep, struct tether__tcp_rejoin *r, int *accept)
{
    int any = 0;
    *accept = 0;
    pthread_mutex_lock(&ep->mu);
    for (int p = 0; p < ep->size; p++) {
        int mine = 0; /* the lane's index among those this rank opens */
        r->redial[p] = 0;
        for (int k = 0; k < ep->nlinks[p] && ep->nlinks[p] > 1 && !ep->err; k++) {
            tether__link *l = &ep->links[p][k];
            int out = l->lane != TETHER__LANE_DIRECT && !l->eof && !l->bye;
            if (l->dialed && out && l->newfd < 0 && !l->switching && mine < 64) {
                r->redial[p] |= (uint64_t)1 << mine;
                any = 1;
            } else if (!l->dialed && out) { /* also when switching: the peer may dial again */
                *accept = any = 1;
            }
            mine += l->dialed;
        }
    }
    pthread_mutex_unlock(&ep->mu);
    return any;
}

/* One set-up of the lanes that are out; what comes up goes to the engine. */
static void try_once(tether__tcp_ep *ep, struct tether__tcp_rejoin *r, int accept)
{
    tether__net_plan p = r->plan;
    tether__net_links links;
    p.redial = r->redial;
    p.timeout_ms = REJOIN_TRY_MS;
    if (!accept)
        p.nlisten = 0;
    if (tether__net_setup(&p, &links) < 0)
        return; /* still down; the next try in a second */
    pthread_mutex_lock(&ep->mu);
    for (int peer = 0; peer < links.size && peer < ep->size; peer++)
        for (int k = 0; k < links.nlinks[peer] && k < ep->nlinks[peer]; k++)
            if (links.fds[peer][k] >= 0) {
                tether__tcp_lane_back(ep, &ep->links[peer][k], links.fds[peer][k]);
                links.fds[peer][k] = -1;
            }
    pthread_mutex_unlock(&ep->mu);
    tether__net_links_free(&links);
}

static void *run(void *arg)
{
    tether__tcp_ep *ep = arg;
    struct tether__tcp_rejoin *r = ep->rejoin;
    pthread_mutex_lock(&r->mu);
    while (!r->stop) {
        if (r->asked == r->seen) {
            pthread_cond_wait(&r->cv, &r->mu);
            continue;
        }
        uint64_t asked = r->asked;
        pthread_mutex_unlock(&r->mu);
        int accept, any = wanted(ep, r, &accept);
        int64_t end = tether__net_now_ms() + REJOIN_TRY_MS;
        if (any)
            try_once(ep, r, accept);
        pthread_mutex_lock(&r->mu);
        if (!any) { /* every lane is back: sleep until one leaves again */
            r->seen = asked;
            continue;
        }
        while (!r->stop && tether__net_now_ms() < end) { /* a second between tries */
            struct timespec ts = tether__loop_deadline(end - tether__net_now_ms());
            pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        }
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static void rejoin_free(struct tether__tcp_rejoin *r)
{
    for (int i = 0; i < r->nlisten; i++)
        close(r->listen_fds[i]);
    free(r->listen_fds);
    free(r->redial);
    tether__net_plan_free(&r->plan);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

int tether__tcp_rejoin_start(tether__tcp_ep *ep, tether__net_plan *plan, int *nlisten,
                             int **listen_fds)
{
    int several = 0;
    for (int p = 0; p < ep->size; p++)
        several |= ep->nlinks[p] > 1;
    if (!several)
        return TETHER_OK;
    struct tether__tcp_rejoin *r = calloc(1, sizeof *r);
    uint64_t *redial = calloc((size_t)ep->size, sizeof *redial);
    if (!r || !redial) {
        free(r);
        free(redial);
        return tether__fail(TETHER_ENOMEM, "out of memory for the rejoin of %d ranks", ep->size);
    }
    if (tether__loop_cond_init(&r->cv) < 0) {
        free(r);
        free(redial);
        return TETHER_ENOMEM;
    }
    pthread_mutex_init(&r->mu, NULL);
    r->redial = redial;
    /* the plan and the listeners are the endpoint's from now on: the world frees neither */
    r->plan = *plan;
    memset(plan, 0, sizeof *plan);
    snprintf(r->token, sizeof r->token, "%s", r->plan.token ? r->plan.token : "");
    r->plan.token = r->token;
    r->nlisten = *nlisten;
    r->listen_fds = *listen_fds;
    *nlisten = 0;
    *listen_fds = NULL;
    r->plan.nlisten = r->nlisten;
    r->plan.listen_fds = r->listen_fds;
    pthread_mutex_lock(&ep->mu);
    ep->rejoin = r;
    pthread_mutex_unlock(&ep->mu);
    int e = pthread_create(&r->thread, NULL, run, ep);
    if (e) {
        pthread_mutex_lock(&ep->mu);
        ep->rejoin = NULL;
        pthread_mutex_unlock(&ep->mu);
        rejoin_free(r);
        return tether__fail(TETHER_ENET, "rank %d: no thread for lanes that come back: %s",
                            ep->rank, strerror(e));
    }
    pthread_mutex_lock(&ep->mu);
    ep->lane_out = lane_out;
    pthread_mutex_unlock(&ep->mu);
    return TETHER_OK;
}

void tether__tcp_rejoin_stop(tether__tcp_ep *ep)
{
    struct tether__tcp_rejoin *r = ep->rejoin;
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_mutex_lock(&ep->mu);
    ep->lane_out = NULL;
    pthread_mutex_unlock(&ep->mu);
    pthread_join(r->thread, NULL);
    ep->rejoin = NULL;
    rejoin_free(r);
}
