/* backends/rdma/rdma.c - the RDMA backend over ibverbs: configuration, open, the transport calls,
 * close.
 *
 * Links follow TETHER_IBV_DEVICES (MLX's N x N matrix): one QP per device named for a pair (a list
 * is several cables, striped). Every entry set is a full mesh; entries set only between ring
 * neighbours (N >= 4) is ring mode, where other ranks are reached by forwarding (route.c) and a
 * progress thread forwards while the program is away (ring_thread.c). Each pair also has a TCP side
 * channel formed through the coordinator. open() loads the verbs
 * library, opens the devices (port active, IPv4-mapped GID found by scanning), creates the QPs with
 * their receives posted, trades QP numbers, PSNs and GIDs on the side channels, moves every QP to
 * RTS and waits until every peer has too, so no frame ever meets a QP that cannot take it. The data
 * path is io.c; TETHER_RDMA_QP=uc|rc picks the QP type (uc on macOS, where only UC exists). Without
 * a matrix (Linux, the backend asked for by name), the links come from rdma_cm on the hostfile's
 * addresses instead (cm.c): one RC QP per peer, the same side channels and data path. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/net/socket.h"
#include "cables.h"
#include "cm.h"
#include "core/params.h"
#include "core/registry.h"
#include "device.h"
#include "heartbeat.h"
#include "hostfile/hostfile.h"
#include "io.h"
#include "probe.h"
#include "qp.h"
#include "rdma.h"
#include "rdma_impl.h"
#include "register.h"
#include "ring_thread.h"
#include "side.h"
#include "state.h"

/* close() waits for its frames to be acknowledged (ring mode: and for every other rank to close)
 * as long as something moves: CLOSE_IDLE_MS with no completion ends the wait, CLOSE_MAX_MS in all
 * bounds it. A fixed bound of 2 s lost frames passing through a ring rank whose neighbours were
 * still in a long call on a busy host (the campaign's rdma-uc-ring all_to_all). */
#define CLOSE_IDLE_MS 5000
#define CLOSE_MAX_MS 60000

#if defined(__APPLE__)
#define NO_DEVICE_HINT                                                                             \
    "macOS 26.2+: run `rdma_ctl enable` in Recovery; `ibv_devices` lists rdma_en*"
#else
#define NO_DEVICE_HINT "`ibv_devices` lists none: is the NIC's RDMA driver loaded (rdma link show)?"
#endif

/* The sticky error, recorded for the calling thread's public call. */
static int sticky(const rdma_ep *ep)
{
    return tether__fail(ep->err, "%s", ep->errmsg);
}

/* Linux, asked for by name: rdma_cm connects the hostfile's addresses without a matrix. Not for
 * "any", which tries rdma first: every TCP job there would try RDMA too. */
static int cm_wanted(const tether__config *cfg)
{
#if defined(__APPLE__)
    (void)cfg;
    return 0; /* no rdma_cm */
#else
    const char *env;
    tether__param_text(TETHER__P_BACKEND, &env);
    const char *b = tether__backend_canonical(env);
    return cfg->hostfile && b && !strcmp(b, "rdma");
#endif
}

static int rdma_configured(const tether__config *cfg, char *why, size_t why_len)
{
    if ((cfg->ibv_devices || cm_wanted(cfg)) && cfg->coordinator)
        return 1;
    if (cfg->ibv_devices || cm_wanted(cfg))
        snprintf(why, why_len, "%s is unset (the RDMA side channel needs it)",
                 TETHER__VARS(COORDINATOR));
    else
        snprintf(why, why_len,
                 "%s is unset (on Linux, %s=rdma with a hostfile connects through rdma_cm "
                 "instead)",
                 TETHER__VARS(IBV_DEVICES), TETHER__VAR(BACKEND));
    return 0;
}

static int rdma_usable(char *why, size_t why_len)
{
    tether__ibv v;
    struct ibv_device **list;
    int n = 0;
    if (tether__ibv_load(&v, why, why_len))
        return 0;
    list = v.get_device_list(&n);
    if (list)
        v.free_device_list(list);
    if (!list || n == 0)
        snprintf(why, why_len, "%s finds no RDMA device (%s)", v.path, NO_DEVICE_HINT);
    tether__ibv_unload(&v);
    return list && n > 0 && tether__rdma_cm_usable(why, why_len);
}

static int qp_type_from_env(rdma_ep *ep)
{
    long qp; /* the row's words: 0 uc, 1 rc */
    int set;
    TRY(set = tether__param_long(TETHER__P_RDMA_QP, &qp));
#if defined(__APPLE__)
    ep->uc = 1; /* the row's computed default: Thunderbolt RDMA offers UC only */
#else
    ep->uc = 0;
#endif
    if (set)
        ep->uc = qp == 0;
    return TETHER_OK;
}

/* TETHER_RDMA_RESEND_MS: a fixed wait for a UC frame's acknowledgement; 0: from the round trip. */
static int resend_from_env(rdma_ep *ep)
{
    long ms;
    TRY(tether__param_long(TETHER__P_RDMA_RESEND_MS, &ms));
    ep->resend_us = (int64_t)ms * 1000;
    return TETHER_OK;
}

/* TETHER_RDMA_WRITE_MIN: bytes from which a message to a peer of one RC link goes by RDMA WRITE
 * (io.c's rendezvous); 0: never. */
static int write_min_from_env(rdma_ep *ep)
{
    long min;
    TRY(tether__param_long(TETHER__P_RDMA_WRITE_MIN, &min));
    ep->write_min = (uint64_t)min;
    return TETHER_OK;
}

/* The device named name: already open, or opened now from list. */
static int device_for(rdma_ep *ep, struct ibv_device **list, int n, const char *name, int peer,
                      const char *file, rdma_dev **out)
{
    char have[512] = "";
    size_t o = 0;
    for (int d = 0; d < ep->ndev; d++)
        if (!strcmp(ep->devs[d].name, name)) {
            *out = &ep->devs[d];
            return TETHER_OK;
        }
    for (int i = 0; i < n; i++) {
        if (!strcmp(ep->ibv.get_device_name(list[i]), name)) {
            *out = &ep->devs[ep->ndev++];
            return tether__rdma_dev_open(ep, *out, list[i]);
        }
        if (o < sizeof have)
            o += (size_t)snprintf(have + o, sizeof have - o, "%s%s", i ? ", " : "",
                                  ep->ibv.get_device_name(list[i]));
    }
    return tether__fail(TETHER_ECONFIG,
                        "rdma: %s (entry [%d][%d] of %s) is not a device of this "
                        "machine, which has: %s (see `ibv_devices`)",
                        name, ep->rank, peer, file, n ? have : "none");
}

static int count_devices(tether__device_list list)
{
    int k = 0;
    while (list[k])
        k++;
    return k;
}

/* Ring mode: N >= 4 and every rank linked to exactly its two ring neighbours (fewer ranks: the
 * ring is a full mesh). Every rank reads the same matrix, so every rank decides the same. */
static int ring_shape(const tether__device_matrix *m)
{
    int n = m->n;
    if (n < 4)
        return 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j && (m->devs[i][j][0] != NULL) != (j == (i + 1) % n || j == (i + n - 1) % n))
                return 0;
    return 1;
}

/* This rank's entry for peer p: its cables, checked against the peer's entry for this rank. */
static int check_entry(rdma_ep *ep, const tether__device_matrix *m, int p, const char *file)
{
    int k = count_devices(m->devs[ep->rank][p]), back = count_devices(m->devs[p][ep->rank]);
    if (k == 0 && !ep->ring)
        return tether__fail(TETHER_ECONFIG,
                            "rdma: entry [%d][%d] of %s is null: the device matrix "
                            "must link every pair (full mesh) or each rank to exactly its two ring "
                            "neighbours (ring mode, 4 or more ranks)",
                            ep->rank, p, file);
    if (k > MAX_CABLES)
        return tether__fail(TETHER_ECONFIG,
                            "rdma: entry [%d][%d] of %s lists %d devices; at most "
                            "%d cables per pair are used",
                            ep->rank, p, file, k, MAX_CABLES);
    if (k != back)
        return tether__fail(TETHER_ECONFIG,
                            "rdma: entry [%d][%d] of %s lists %d device(s) but "
                            "entry [%d][%d] lists %d: both ends of a pair need the same number of "
                            "cables",
                            ep->rank, p, file, k, p, ep->rank, back);
    return TETHER_OK;
}

/* Every link's device, then each device's pool and CQ, then the QPs. */
static int open_devices(rdma_ep *ep, const tether__device_matrix *m, const char *file)
{
    int n = 0, rc = TETHER_OK;
    struct ibv_device **list = ep->ibv.get_device_list(&n);
    if (!list)
        return tether__fail(TETHER_EUNAVAIL, "rdma: ibv_get_device_list failed: %s",
                            strerror(errno));
    ep->ring = ring_shape(m);
    for (int p = 0; p < ep->size && rc == TETHER_OK; p++) {
        rdma_peer *pe = &ep->peers[p];
        if (p == ep->rank || (rc = check_entry(ep, m, p, file)) != TETHER_OK)
            continue;
        tether__device_list cables = m->devs[ep->rank][p];
        for (int k = 0; cables[k] && rc == TETHER_OK; k++) {
            rdma_link *l = &pe->link[pe->nlinks++];
            rc = device_for(ep, list, n, cables[k], p, file, &l->dev);
            if (rc == TETHER_OK)
                l->first_slot = l->dev->nlinks++ * LINK_SLOTS;
        }
    }
    ep->ibv.free_device_list(list);
    for (int d = 0; d < ep->ndev && rc == TETHER_OK; d++)
        rc = tether__rdma_dev_pool(ep, &ep->devs[d]);
    for (RDMA_EACH_LINK(ep, l)) {
        if (rc == TETHER_OK)
            rc = tether__rdma_qp_create(ep, l);
        ep->keeps |= tether__rdma_keeps(ep, l);
    }
    return rc;
}

/* Trade QP details with every peer, link by link in peer order (the same order on both sides, so
 * nobody waits on a rank that waits on it), move every QP to RTS, then wait until every peer's
 * QPs are there too. */
static int connect_links(rdma_ep *ep, int64_t deadline)
{
    char ready = 'R', theirs_ready;
    int rc = TETHER_OK;
    for (RDMA_EACH_LINK(ep, l)) {
        rdma_qp_info mine = tether__rdma_qp_mine(ep, l), theirs;
        if (rc == TETHER_OK)
            rc = tether__rdma_side_swap(ep, &ep->peers[l->peer], l->peer, &mine, &theirs,
                                        sizeof mine, deadline);
        if (rc == TETHER_OK)
            rc = tether__rdma_qp_connect(ep, l, &mine, &theirs);
    }
    for (int p = 0; p < ep->size && rc == TETHER_OK; p++)
        if (ep->peers[p].nlinks)
            rc = tether__rdma_side_swap(ep, &ep->peers[p], p, &ready, &theirs_ready, 1, deadline);
    return rc;
}

static void rdma_close(tether__ep *tep);

static int open_all(const tether__config *cfg, rdma_ep *ep)
{
    tether__device_matrix m;
    char why[512];
    int rc;
    int64_t deadline = tether__net_now_ms() + cfg->timeout_ms;
    TRY(qp_type_from_env(ep));
    TRY(resend_from_env(ep));
    TRY(write_min_from_env(ep));
    if (tether__ibv_load(&ep->ibv, why, sizeof why))
        return tether__fail(TETHER_EUNAVAIL, "rdma: %s", why);
    if (!cfg->ibv_devices) {
        TRY(tether__rdma_side_open(cfg, ep));
        return tether__rdma_cm_open(cfg, ep, deadline);
    }
    TRY(tether__hostfile_load_devices(cfg->ibv_devices, &m));
    if (m.n != ep->size)
        rc = tether__fail(TETHER_ECONFIG,
                          "rdma: %s is a %d x %d device matrix but the job has %d "
                          "ranks",
                          cfg->ibv_devices, m.n, m.n, ep->size);
    else
        rc = open_devices(ep, &m, cfg->ibv_devices);
    tether__device_matrix_free(&m);
    TRY(rc);
    TRY(tether__rdma_side_open(cfg, ep));
    TRY(connect_links(ep, deadline));
    return ep->ring ? tether__rdma_thread_start(ep) : TETHER_OK;
}

/* MLX's JACCL needs no world size: the device matrix (N x N) says it. cfg with that size. */
static int size_from_matrix(const tether__config *given, tether__config *cfg)
{
    tether__device_matrix m;
    *cfg = *given;
    if (cfg->size >= 1 || !cfg->ibv_devices)
        return TETHER_OK;
    TRY(tether__hostfile_load_devices(cfg->ibv_devices, &m));
    cfg->size = m.n;
    tether__device_matrix_free(&m);
    return TETHER_OK;
}

static int rdma_open(const tether__config *given, tether__ep **out, int *rank, int *size)
{
    rdma_ep *ep;
    tether__config derived, *cfg = &derived;
    int rc;
    TRY(size_from_matrix(given, &derived));
    if (cfg->size < 1 || cfg->rank < 0 || cfg->rank >= cfg->size)
        return tether__fail(TETHER_ECONFIG,
                            "rdma: %s=%d and %s=%d: the coordinator "
                            "bootstrap needs both, with 0 <= rank < size",
                            TETHER__VAR(RANK), cfg->rank, TETHER__VAR(SIZE), cfg->size);
    ep = calloc(1, sizeof *ep);
    if (!ep || !(ep->peers = calloc((size_t)cfg->size, sizeof *ep->peers)) ||
        !(ep->devs = calloc((size_t)cfg->size * MAX_CABLES, sizeof *ep->devs))) {
        if (ep)
            free(ep->peers);
        free(ep);
        return tether__fail(TETHER_ENOMEM, "rdma: out of memory for the endpoint");
    }
    pthread_mutex_init(&ep->mu, NULL);
    ep->rank = cfg->rank;
    ep->size = cfg->size;
    ep->ack_due_ms = -1;
    ep->push = tether__rdma_push;
    ep->beat_ms = cfg->heartbeat_ms;
    for (int p = 0; p < ep->size; p++) {
        ep->peers[p].fd = -1;
        for (int k = 0; k < MAX_CABLES; k++)
            ep->peers[p].link[k] = (rdma_link){.peer = p, .lane = k};
    }
    if ((rc = open_all(cfg, ep)) < 0 || (rc = tether__rdma_beat_start(ep, cfg->heartbeat_ms)) < 0) {
        rdma_close((tether__ep *)ep);
        return rc;
    }
    TLOG_INFO("rdma: %s, %s QPs on %d device(s)%s", ep->ring ? "ring mode" : "full mesh",
              ep->uc ? "UC" : "RC", ep->ndev, ep->cm ? ", connected through rdma_cm" : "");
    *out = (tether__ep *)ep;
    *rank = ep->rank;
    *size = ep->size;
    return TETHER_OK;
}

/* Ring mode links the neighbours only: the core picks ring algorithms, and others are forwarded. */
static unsigned rdma_caps(const tether__ep *ep)
{
    return ((const rdma_ep *)ep)->ring ? 0 : TETHER__CAP_DIRECT;
}

static uint64_t rdma_moved(tether__ep *ep)
{
    return atomic_load_explicit(&((rdma_ep *)ep)->moved, memory_order_relaxed);
}

static void req_release(rdma_ep *ep, struct tether__req *r)
{
    /* A receive let go unfinished (the endpoint broke) may be the one a lane was filling: that
     * lane forgets it, so closing never looks into the freed request (ASan: lastcable.2.rc). */
    for (int p = 0; !r->is_send && !r->done && p < ep->size; p++)
        for (int k = 0; k < MAX_CABLES; k++)
            for (int i = 0; i < r->nparts; i++)
                if (ep->peers[p].arriving[k].cur == &r->part[i].rx)
                    ep->peers[p].arriving[k].cur = NULL;
    if (!r->done) /* and one under way by RDMA WRITE (io.c), sent or received */
        tether__rdma_rv_forget(ep, r);
    tether__net_live_remove(&ep->live, &r->live);
    free(r);
}

/* A new request to peer; NULL and the error when it cannot be made. */
static struct tether__req *req_new(rdma_ep *ep, int peer, tether__tag tag, size_t len, int *rc)
{
    struct tether__req *r;
    if (ep->err) {
        *rc = sticky(ep);
        return NULL;
    }
    if (peer < 0 || peer >= ep->size || peer == ep->rank) {
        *rc = tether__fail(TETHER_EINVAL, "rdma: no link to rank %d (rank %d of %d)", peer,
                           ep->rank, ep->size);
        return NULL;
    }
    if (!(r = calloc(1, sizeof *r))) {
        *rc = tether__fail(TETHER_ENOMEM, "rdma: out of memory for a request");
        return NULL;
    }
    r->peer = peer;
    r->tag = tag;
    r->len = len;
    tether__rxcache_note(&ep->rxcache, len);
    tether__net_live_add(&ep->live, &r->live, peer);
    *rc = TETHER_OK;
    return r;
}

/* isend (is_send: buf holds the bytes) or irecv (buf takes them). */
static int post(tether__ep *tep, int is_send, int peer, void *buf, size_t len, tether__tag tag,
                tether__req **out)
{
    rdma_ep *ep = (rdma_ep *)tep;
    struct tether__req *r;
    int rc;
    pthread_mutex_lock(&ep->mu);
    ep->calls++;
    if (!ep->err)
        tether__rdma_sweep_stale(ep); /* a break shows as ep->err in req_new */
    if ((r = req_new(ep, peer, tag, len, &rc)) != NULL) {
        *out = r;
        if (!is_send) {
            ep->recvs++;
            rc = tether__rdma_recv(ep, r, buf);
        } else {
            r->is_send = 1;
            r->buf = buf;
            r->src = (uint32_t)ep->rank;
            r->dst = (uint32_t)peer;
            rc = ep->peers[peer].bye
                     ? tether__rdma_break(ep, TETHER_EPEER,
                                          "rank %d closed its endpoint while rank %d still sends "
                                          "to it",
                                          peer, ep->rank)
                     : tether__rdma_send(ep, r);
        }
    }
    pthread_mutex_unlock(&ep->mu);
    return rc < 0 ? (ep->err ? sticky(ep) : rc) : TETHER_OK;
}

static int rdma_isend(tether__ep *tep, int peer, const void *buf, size_t len, tether__tag tag,
                      tether__req **out)
{
    return post(tep, 1, peer, (void *)buf, len, tag, out); /* only read: r->buf is const */
}

static int rdma_irecv(tether__ep *tep, int peer, void *buf, size_t len, tether__tag tag,
                      tether__req **out)
{
    return post(tep, 0, peer, buf, len, tag, out);
}

/* Where part pt of a receive from peer waits: the posted queue of its lane, or NULL once it has
 * met its message. */
static tether__rxq *posted_queue(rdma_peer *pe, rdma_part *pt)
{
    for (int lane = 0; lane < MAX_CABLES; lane++)
        if (tether__rxq_holds_msg(&pe->posted[lane], &pt->rx))
            return &pe->posted[lane];
    return NULL;
}

/* core/transport.h's cancel: a receive none of whose parts has met its message is withdrawn. */
static int rdma_cancel(tether__ep *tep, tether__req *r)
{
    rdma_ep *ep = (rdma_ep *)tep;
    int rc = 0, moved = 0;
    pthread_mutex_lock(&ep->mu);
    ep->calls++;
    tether__rdma_poll_cqs(ep, &moved); /* what has come first: a part it matched is too late */
    int waiting = !ep->err && !r->is_send && !r->done;
    for (int i = 0; i < r->nparts && waiting; i++)
        waiting = posted_queue(&ep->peers[r->peer], &r->part[i]) != NULL;
    if (ep->err) {
        rc = sticky(ep);
        req_release(ep, r);
    } else if (waiting) {
        for (int i = 0; i < r->nparts; i++)
            tether__rxq_remove(posted_queue(&ep->peers[r->peer], &r->part[i]), &r->part[i].rx);
        req_release(ep, r);
        rc = 1;
    }
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

static int rdma_test(tether__ep *tep, tether__req *r, int *done)
{
    rdma_ep *ep = (rdma_ep *)tep;
    int moved = 0, rc;
    pthread_mutex_lock(&ep->mu);
    ep->calls++;
    tether__rdma_poll_cqs(ep, &moved);
    if (ep->loop) { /* parts of other threads' requests may have finished: wake their waits */
        if (moved)
            ep->events++;
        tether__loop_signal(ep->loop);
        tether__loop_seen(ep->loop);
    }
    *done = !ep->err && r->done;
    if (ep->err || r->done)
        req_release(ep, r);
    rc = ep->err ? sticky(ep) : TETHER_OK;
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

/* Sleep in poll() on every device channel and side channel, at most timeout_ms. */
static int sleep_on_fds(rdma_ep *ep, int timeout_ms)
{
    int n, ready, poll_errno;
    struct pollfd *pfd = calloc((size_t)(ep->ndev + ep->size), sizeof *pfd);
    if (!pfd)
        return tether__rdma_break(ep, TETHER_ENOMEM, "rdma: out of memory waiting");
    n = tether__rdma_poll_set(ep, pfd);
    ep->drivers++; /* ring mode: the progress thread stands by meanwhile */
    pthread_mutex_unlock(&ep->mu);
    ready = poll(pfd, (nfds_t)n, timeout_ms);
    poll_errno = errno;
    pthread_mutex_lock(&ep->mu);
    ep->drivers--;
    if (ready > 0)
        tether__rdma_poll_ready(ep, pfd);
    free(pfd);
    if (ready < 0 && poll_errno != EINTR)
        return tether__rdma_break(ep, TETHER_ENET, "rdma: poll() failed: %s", strerror(poll_errno));
    return TETHER_OK;
}

/* Full mesh and ring mode alike: the calling thread arms the CQs, looks once more and sleeps on
 * the channels itself, so a completion costs one wake-up. In ring mode the progress thread may
 * have finished parts since this thread's test(): then it returns at once; and it may have
 * finished another thread's request meanwhile, whose wait() it wakes. */
static int rdma_wait(tether__ep *tep, int timeout_ms)
{
    rdma_ep *ep = (rdma_ep *)tep;
    int moved = 0, rc;
    pthread_mutex_lock(&ep->mu);
    ep->calls++;
    if (ep->loop && tether__loop_missed(ep->loop))
        tether__loop_seen(ep->loop);
    else if (tether__rdma_arm(ep, &moved) == TETHER_OK && !moved)
        sleep_on_fds(ep, ep->ack_due_ms >= 0 && (timeout_ms < 0 || ep->ack_due_ms < timeout_ms)
                             ? ep->ack_due_ms /* wake to send it */
                             : timeout_ms);
    if (ep->loop) {
        if (moved)
            ep->events++;
        tether__loop_signal(ep->loop);
    }
    rc = ep->err ? sticky(ep) : TETHER_OK;
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

static void rdma_abort(tether__ep *tep, int code, const char *msg)
{
    rdma_ep *ep = (rdma_ep *)tep;
    pthread_mutex_lock(&ep->mu);
    tether__rdma_break(ep, code, "%s", msg);
    tether__rdma_side_say(ep, SIDE_ABORT, code, msg);
    pthread_mutex_unlock(&ep->mu);
}

static int sends_done(rdma_ep *ep)
{
    return !tether__rdma_sends_left(ep);
}

static int all_closed(rdma_ep *ep)
{
    for (int p = 0; p < ep->size; p++)
        if (p != ep->rank && !ep->peers[p].bye && !ep->peers[p].eof)
            return 0;
    return sends_done(ep);
}

/* Move frames until done(ep) holds, as long as completions keep coming (CLOSE_IDLE_MS,
 * CLOSE_MAX_MS). In ring mode the progress thread moves them, and this thread sleeps on its
 * signals. */
static void settle(rdma_ep *ep, int (*done)(rdma_ep *), const char *what)
{
    int64_t start = tether__net_now_ms(), idle_from = start;
    uint64_t seen = atomic_load_explicit(&ep->moved, memory_order_relaxed);
    while (!ep->err && !done(ep)) {
        int64_t now = tether__net_now_ms();
        uint64_t m = atomic_load_explicit(&ep->moved, memory_order_relaxed);
        if (m != seen) {
            seen = m;
            idle_from = now;
        } else if (now - idle_from >= CLOSE_IDLE_MS || now - start >= CLOSE_MAX_MS) {
            TLOG_INFO("rdma: rank %d closes without %s (nothing moved for %lld ms)", ep->rank, what,
                      (long long)(now - idle_from));
            return;
        }
        if (ep->loop) {
            struct timespec until = tether__loop_deadline(50);
            tether__loop_sleep(ep->loop, &until);
            int moved = 0;
            if (ep->keeps && !ep->beat) /* the heartbeat's tick (heartbeat.c) has stopped: the */
                tether__rdma_poll_cqs(ep, &moved); /* acknowledgements owed go from here */
        } else {
            int moved = 0;
            if (tether__rdma_arm(ep, &moved) == TETHER_OK && !moved)
                sleep_on_fds(ep, 10);
        }
    }
}

static void free_peer(rdma_ep *ep, rdma_peer *pe)
{
    for (int k = 0; k < pe->nlinks; k++) {
        rdma_link *l = &pe->link[k];
        if (l->qp) {
            int rc = ep->ibv.destroy_qp(l->qp);
            if (rc)
                TLOG_WARN("rdma: ibv_destroy_qp for rank %d on %s failed: %s", l->peer,
                          l->dev->name, strerror(rc));
        }
    }
    for (int k = 0; k < MAX_CABLES; k++) {
        tether__rxmsg *cur = pe->arriving[k].cur;
        if (cur && cur->heap && cur->req) /* claimed while arriving: no queue holds it */
            tether__rxcache_put(&ep->rxcache, cur);
        free(pe->arriving[k].fwd); /* a message passing through: nobody else frees it */
    }
    for (int k = 0; k < MAX_CABLES; k++)
        while (pe->unexpected[k].head) {
            tether__rxmsg *m = pe->unexpected[k].head;
            pe->unexpected[k].head = m->next;
            tether__rxcache_put(&ep->rxcache, m);
        }
    if (pe->fd >= 0)
        close(pe->fd);
}

static void rdma_close(tether__ep *tep)
{
    rdma_ep *ep = (rdma_ep *)tep;
    pthread_mutex_lock(&ep->mu);
    /* Frames not yet acknowledged would die with their QP; the heartbeats go on meanwhile (they
     * take ep->mu, released while this thread sleeps). */
    settle(ep, sends_done, "every frame acknowledged");
    pthread_mutex_unlock(&ep->mu);
    tether__heartbeat_stop(ep->beat); /* and none goes out after the bye */
    ep->beat = NULL;
    pthread_mutex_lock(&ep->mu);
    if (ep->uc)
        TLOG_INFO("rdma: rank %d resent %llu UC frames, dropped %llu duplicates and %llu frames "
                  "after a gap",
                  ep->rank, (unsigned long long)ep->resent, (unsigned long long)ep->dups,
                  (unsigned long long)ep->gaps);
    int nlinks = 0;
    for (RDMA_EACH_LINK(ep, l))
        nlinks++;
    if (!ep->uc) /* TETHER_RDMA_WRITE_MIN=0 too: what the SEND path copies */
        TLOG_INFO("rdma: rank %d took %llu bytes by RDMA WRITE in %llu messages and copied %llu "
                  "payload bytes out of receive slots, %llu of them of messages from "
                  "%s up; at most %d message registrations at once (bound %d)",
                  ep->rank, (unsigned long long)ep->written, (unsigned long long)ep->written_msgs,
                  (unsigned long long)ep->copied, (unsigned long long)ep->copied_big,
                  TETHER__VAR(RDMA_WRITE_MIN), ep->mrs_peak, RDMA_MRS_BOUND(nlinks));
    for (RDMA_EACH_LINK(ep, l)) /* a cable that came back is in use (rejoin.c) */
        if (l->rejoins)
            TLOG_INFO("rdma: rank %d: cable %s to rank %d came back %d time(s) and carried %u "
                      "frames since%s",
                      ep->rank, l->dev->name, l->peer, l->rejoins, l->tx_seq,
                      l->down ? "; it is out of use again" : "");
    /* Ring mode: others' messages may still pass through here; keep passing them on until every
     * rank has closed too, then say the final counts. */
    if (ep->loop) {
        tether__rdma_side_say(ep, SIDE_BYE, BYE_CLOSING, NULL);
        settle(ep, all_closed, "every other rank closed");
    }
    tether__rdma_side_say(ep, SIDE_BYE, BYE_CLOSED, NULL);
    tether__loop_stop(&ep->loop);
    tether__rdma_cm_close(ep);         /* its QPs and connections */
    for (int p = 0; p < ep->size; p++) /* before the requests: their queues still point at them */
        if (p != ep->rank)
            free_peer(ep, &ep->peers[p]);
    while (ep->live)
        req_release(ep, (struct tether__req *)ep->live);
    tether__rxcache_clear(&ep->rxcache);
    for (int d = 0; d < ep->ndev; d++)
        tether__rdma_dev_close(ep, &ep->devs[d]);
    tether__ibv_unload(&ep->ibv);
    pthread_mutex_unlock(&ep->mu);
    pthread_mutex_destroy(&ep->mu);
    free(ep->peers);
    tether__net_records_free(&ep->records);
    free(ep->devs);
    free(ep);
}

const tether__transport_ops tether__rdma_ops = {
    .name = "rdma",
    .configured = rdma_configured,
    .usable = rdma_usable,
    .open = rdma_open,
    .caps = rdma_caps,
    .isend = rdma_isend,
    .irecv = rdma_irecv,
    .test = rdma_test,
    .probe = tether__rdma_probe,
    .cancel = rdma_cancel,
    .wait = rdma_wait,
    .moved = rdma_moved,
    .alive = tether__rdma_alive,
    .watch = tether__rdma_watch,
    .track = tether__rdma_track,
    .abort = rdma_abort,
    .close = rdma_close,
};
