/* backends/rdma/rdma.c - the RDMA backend over ibverbs: configuration, open, the transport calls, close.
 *
 * Full mesh: one QP per peer, on the device TETHER_IBV_DEVICES names for the pair (MLX's N x N
 * matrix), plus a TCP side channel per peer formed through the coordinator. open() loads the verbs
 * library, opens the devices (port active, IPv4-mapped GID found by scanning), creates the QPs with
 * their receives posted, trades QP numbers, PSNs and GIDs on the side channels, moves every QP to
 * RTS and waits until every peer has too, so no frame ever meets a QP that cannot take it. The data
 * path is io.c; TETHER_RDMA_QP=uc|rc picks the QP type (uc on macOS, where only UC exists). */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdma.h"
#include "backends/tcp/socket.h"
#include "hostfile/hostfile.h"
#include "rdma_impl.h"

#define CLOSE_DRAIN_MS 2000 /* how long close() waits for its last frames to leave */

#if defined(__APPLE__)
#define NO_DEVICE_HINT "macOS 26.2+: run `rdma_ctl enable` in Recovery; `ibv_devices` lists rdma_en*"
#else
#define NO_DEVICE_HINT "`ibv_devices` lists none: is the NIC's RDMA driver loaded (rdma link show)?"
#endif

int tether__rdma_break(rdma_ep *ep, int code, const char *fmt, ...)
{
    va_list ap;
    if (ep->err)
        return ep->err;
    va_start(ap, fmt);
    vsnprintf(ep->errmsg, sizeof ep->errmsg, fmt, ap);
    va_end(ap);
    ep->err = code;
    TLOG_INFO("rdma endpoint broken: %s: %s", tether_err_name(code), ep->errmsg);
    return code;
}

/* The sticky error, recorded for the calling thread's public call. */
static int sticky(const rdma_ep *ep)
{
    return tether__fail(ep->err, "%s", ep->errmsg);
}

static int rdma_configured(const tether_config *cfg, char *why, size_t why_len)
{
    if (cfg->ibv_devices && cfg->coordinator)
        return 1;
    snprintf(why, why_len, "%s", !cfg->ibv_devices
                                     ? "TETHER_IBV_DEVICES (or MLX_IBV_DEVICES) is unset"
                                     : "TETHER_COORDINATOR is unset (the RDMA side channel needs it)");
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
    return list && n > 0;
}

static int qp_type_from_env(rdma_ep *ep)
{
    const char *v = tether__env("TETHER_RDMA_QP", NULL);
#if defined(__APPLE__)
    ep->uc = 1; /* Thunderbolt RDMA offers UC only */
#else
    ep->uc = 0;
#endif
    if (!v || !*v)
        return TETHER_OK;
    if (strcmp(v, "uc") && strcmp(v, "rc"))
        return tether__fail(TETHER_ECONFIG, "TETHER_RDMA_QP=\"%s\": expected uc or rc", v);
    ep->uc = !strcmp(v, "uc");
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
    return tether__fail(TETHER_ECONFIG, "rdma: %s (entry [%d][%d] of %s) is not a device of this "
                        "machine, which has: %s (see `ibv_devices`)", name, ep->rank, peer, file,
                        n ? have : "none");
}

/* Every link's device, then each device's pool and CQ, then the QPs. */
static int open_devices(rdma_ep *ep, const tether_device_matrix *m, const char *file)
{
    int n = 0, rc = TETHER_OK;
    struct ibv_device **list = ep->ibv.get_device_list(&n);
    if (!list)
        return tether__fail(TETHER_EUNAVAIL, "rdma: ibv_get_device_list failed: %s",
                            strerror(errno));
    for (int p = 0; p < ep->size && rc == TETHER_OK; p++) {
        const char *name = m->devs[ep->rank][p][0];
        rdma_link *l = &ep->links[p];
        if (p == ep->rank)
            continue;
        if (!name) {
            rc = tether__fail(TETHER_ECONFIG, "rdma: entry [%d][%d] of %s is null: the full mesh "
                              "needs a device from rank %d to every peer", ep->rank, p, file,
                              ep->rank);
            break;
        }
        if ((rc = device_for(ep, list, n, name, p, file, &l->dev)) == TETHER_OK)
            l->first_slot = l->dev->nlinks++ * LINK_SLOTS;
    }
    ep->ibv.free_device_list(list);
    for (int d = 0; d < ep->ndev && rc == TETHER_OK; d++)
        rc = tether__rdma_dev_pool(ep, &ep->devs[d]);
    for (int p = 0; p < ep->size && rc == TETHER_OK; p++)
        if (p != ep->rank)
            rc = tether__rdma_qp_create(ep, &ep->links[p]);
    return rc;
}

static uint32_t initial_psn(const rdma_ep *ep, int peer)
{
    return (uint32_t)(tether__tcp_now_ms() * 2654435761u ^ (uint64_t)ep->rank << 12 ^
                      (uint64_t)peer) & 0xffffff;
}

/* Trade QP details with every peer (all writes first: they are small, so nobody blocks), move
 * every QP to RTS, then wait until every peer's QP is there too. */
static int connect_links(rdma_ep *ep, int64_t deadline)
{
    rdma_qp_info *mine = calloc((size_t)ep->size, sizeof *mine);
    rdma_qp_info *theirs = calloc((size_t)ep->size, sizeof *theirs);
    char ready = 'R';
    int rc = mine && theirs ? TETHER_OK
                            : tether__fail(TETHER_ENOMEM, "rdma: out of memory for QP details");
    for (int p = 0; p < ep->size && rc == TETHER_OK; p++) {
        rdma_link *l = &ep->links[p];
        if (p == ep->rank)
            continue;
        mine[p] = (rdma_qp_info){.qpn = l->qp->qp_num, .psn = initial_psn(ep, p),
                                 .gid = l->dev->gid, .mtu = (uint32_t)l->dev->mtu};
        rc = tether__rdma_side_swap(ep, l, &mine[p], &theirs[p], sizeof mine[p], deadline);
    }
    for (int p = 0; p < ep->size && rc == TETHER_OK; p++)
        if (p != ep->rank)
            rc = tether__rdma_qp_connect(ep, &ep->links[p], &mine[p], &theirs[p]);
    for (int p = 0; p < ep->size && rc == TETHER_OK; p++)
        if (p != ep->rank)
            rc = tether__rdma_side_swap(ep, &ep->links[p], &ready, &theirs[p], 1, deadline);
    free(mine);
    free(theirs);
    return rc;
}

static void rdma_close(tether_ep *tep);

static int open_all(const tether_config *cfg, rdma_ep *ep)
{
    tether_device_matrix m;
    char why[512];
    int rc;
    int64_t deadline = tether__tcp_now_ms() + cfg->timeout_ms;
    TRY(qp_type_from_env(ep));
    if (tether__ibv_load(&ep->ibv, why, sizeof why))
        return tether__fail(TETHER_EUNAVAIL, "rdma: %s", why);
    TRY(tether_hostfile_load_devices(cfg->ibv_devices, &m));
    if (m.n != ep->size)
        rc = tether__fail(TETHER_ECONFIG, "rdma: %s is a %d x %d device matrix but the job has %d "
                          "ranks", cfg->ibv_devices, m.n, m.n, ep->size);
    else
        rc = open_devices(ep, &m, cfg->ibv_devices);
    tether_device_matrix_free(&m);
    TRY(rc);
    TRY(tether__rdma_side_open(cfg, ep));
    return connect_links(ep, deadline);
}

static int rdma_open(const tether_config *cfg, tether_ep **out, int *rank, int *size)
{
    rdma_ep *ep;
    int rc;
    if (cfg->size < 1 || cfg->rank < 0 || cfg->rank >= cfg->size)
        return tether__fail(TETHER_ECONFIG, "rdma: TETHER_RANK=%d and TETHER_SIZE=%d: the coordinator "
                            "bootstrap needs both, with 0 <= rank < size", cfg->rank, cfg->size);
    ep = calloc(1, sizeof *ep);
    if (!ep || !(ep->links = calloc((size_t)cfg->size, sizeof *ep->links)) ||
        !(ep->devs = calloc((size_t)cfg->size, sizeof *ep->devs))) {
        if (ep)
            free(ep->links);
        free(ep);
        return tether__fail(TETHER_ENOMEM, "rdma: out of memory for the endpoint");
    }
    pthread_mutex_init(&ep->mu, NULL);
    ep->rank = cfg->rank;
    ep->size = cfg->size;
    for (int p = 0; p < ep->size; p++) {
        ep->links[p].peer = p;
        ep->links[p].fd = -1;
    }
    if ((rc = open_all(cfg, ep)) < 0) {
        rdma_close((tether_ep *)ep);
        return rc;
    }
    TLOG_INFO("rdma: %s QPs to %d peers on %d device(s)", ep->uc ? "UC" : "RC", ep->size - 1,
              ep->ndev);
    *out = (tether_ep *)ep;
    *rank = ep->rank;
    *size = ep->size;
    return TETHER_OK;
}

static unsigned rdma_caps(const tether_ep *ep)
{
    (void)ep;
    return TETHER_CAP_DIRECT;
}

static void req_live(rdma_ep *ep, struct tether_req *r)
{
    r->next = ep->live;
    if (ep->live)
        ep->live->prev = r;
    ep->live = r;
}

static void req_release(rdma_ep *ep, struct tether_req *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        ep->live = r->next;
    if (r->next)
        r->next->prev = r->prev;
    free(r);
}

/* A new request to peer; NULL and the error when it cannot be made. */
static struct tether_req *req_new(rdma_ep *ep, int peer, tether_tag tag, int *rc)
{
    struct tether_req *r;
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
    req_live(ep, r);
    *rc = TETHER_OK;
    return r;
}

static int rdma_isend(tether_ep *tep, int peer, const void *buf, size_t len, tether_tag tag,
                      tether_req **out)
{
    rdma_ep *ep = (rdma_ep *)tep;
    struct tether_req *r;
    int rc;
    pthread_mutex_lock(&ep->mu);
    if ((r = req_new(ep, peer, tag, &rc)) != NULL) {
        rdma_link *l = &ep->links[peer];
        r->is_send = 1;
        r->buf = buf;
        r->len = len;
        if (l->sendq_tail)
            l->sendq_tail->qnext = r;
        else
            l->sendq = r;
        l->sendq_tail = r;
        rc = l->bye ? tether__rdma_break(ep, TETHER_EPEER, "rank %d closed its endpoint while rank "
                                         "%d still sends to it", peer, ep->rank)
                    : tether__rdma_push(ep, l);
        *out = r;
    }
    pthread_mutex_unlock(&ep->mu);
    return rc < 0 ? (ep->err ? sticky(ep) : rc) : TETHER_OK;
}

static int rdma_irecv(tether_ep *tep, int peer, void *buf, size_t len, tether_tag tag,
                      tether_req **out)
{
    rdma_ep *ep = (rdma_ep *)tep;
    struct tether_req *r;
    int rc;
    pthread_mutex_lock(&ep->mu);
    if ((r = req_new(ep, peer, tag, &rc)) != NULL) {
        r->rx = (tether__rxmsg){.tag = tag, .msglen = len, .len = len, .buf = buf, .req = r};
        rc = tether__rdma_claim(ep, &ep->links[peer], r);
        *out = r;
    }
    pthread_mutex_unlock(&ep->mu);
    return rc < 0 ? (ep->err ? sticky(ep) : rc) : TETHER_OK;
}

static int rdma_test(tether_ep *tep, tether_req *r, int *done)
{
    rdma_ep *ep = (rdma_ep *)tep;
    int moved = 0, rc;
    pthread_mutex_lock(&ep->mu);
    tether__rdma_progress(ep, &moved);
    *done = !ep->err && r->done;
    if (ep->err || r->done)
        req_release(ep, r);
    rc = ep->err ? sticky(ep) : TETHER_OK;
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

/* Arm every CQ, then look once more, so a completion that came before the arm is not slept on. */
static int arm(rdma_ep *ep, int *moved)
{
    for (int d = 0; d < ep->ndev; d++) {
        int rc = ibv_req_notify_cq(ep->devs[d].cq, 0);
        if (rc)
            return tether__rdma_break(ep, TETHER_ENET, "rdma: ibv_req_notify_cq(%s) failed: %s",
                                      ep->devs[d].name, strerror(rc));
    }
    return tether__rdma_progress(ep, moved);
}

/* Sleep in poll() on every device channel and side channel, at most timeout_ms. */
static int sleep_on_fds(rdma_ep *ep, int timeout_ms)
{
    int n = 0, ready;
    struct pollfd *pfd = calloc((size_t)(ep->ndev + ep->size), sizeof *pfd);
    if (!pfd)
        return tether__rdma_break(ep, TETHER_ENOMEM, "rdma: out of memory waiting");
    for (int d = 0; d < ep->ndev; d++)
        pfd[n++] = (struct pollfd){.fd = ep->devs[d].ch->fd, .events = POLLIN};
    for (int p = 0; p < ep->size; p++)
        pfd[n++] = (struct pollfd){.fd = p == ep->rank || ep->links[p].eof ? -1 : ep->links[p].fd,
                                   .events = POLLIN};
    pthread_mutex_unlock(&ep->mu);
    ready = poll(pfd, (nfds_t)n, timeout_ms);
    pthread_mutex_lock(&ep->mu);
    for (int d = 0; ready > 0 && d < ep->ndev; d++)
        if (pfd[d].revents)
            tether__rdma_dev_events(ep, &ep->devs[d]);
    for (int p = 0; ready > 0 && p < ep->size; p++)
        if (pfd[ep->ndev + p].revents)
            tether__rdma_side_read(ep, &ep->links[p]);
    free(pfd);
    if (ready < 0 && errno != EINTR)
        return tether__rdma_break(ep, TETHER_ENET, "rdma: poll() failed: %s", strerror(errno));
    return TETHER_OK;
}

static int rdma_wait(tether_ep *tep, int timeout_ms)
{
    rdma_ep *ep = (rdma_ep *)tep;
    int moved = 0, rc;
    pthread_mutex_lock(&ep->mu);
    if (arm(ep, &moved) == TETHER_OK && !moved)
        sleep_on_fds(ep, timeout_ms);
    rc = ep->err ? sticky(ep) : TETHER_OK;
    pthread_mutex_unlock(&ep->mu);
    return rc;
}

static void rdma_abort(tether_ep *tep, int code, const char *msg)
{
    rdma_ep *ep = (rdma_ep *)tep;
    pthread_mutex_lock(&ep->mu);
    tether__rdma_break(ep, code, "%s", msg);
    tether__rdma_side_say(ep, SIDE_ABORT, code, msg);
    pthread_mutex_unlock(&ep->mu);
}

static int sends_in_flight(const rdma_ep *ep)
{
    for (int p = 0; p < ep->size; p++)
        if (p != ep->rank && ep->links[p].qp && ep->links[p].nfree_send < SEND_SLOTS)
            return 1;
    return 0;
}

/* Frames posted but not yet sent would die with their QP: let them leave first. */
static void drain_sends(rdma_ep *ep)
{
    int64_t deadline = tether__tcp_now_ms() + CLOSE_DRAIN_MS;
    while (!ep->err && sends_in_flight(ep) && tether__tcp_now_ms() < deadline) {
        int moved = 0;
        if (arm(ep, &moved) == TETHER_OK && !moved)
            sleep_on_fds(ep, 10);
    }
}

static void free_link(rdma_ep *ep, rdma_link *l)
{
    if (l->cur && l->cur->heap && l->cur->req) /* claimed while arriving: no queue holds it */
        free(l->cur);
    while (l->unexpected.head) {
        tether__rxmsg *m = l->unexpected.head;
        l->unexpected.head = m->next;
        free(m);
    }
    if (l->qp) {
        int rc = ep->ibv.destroy_qp(l->qp);
        if (rc)
            TLOG_WARN("rdma: ibv_destroy_qp for rank %d failed: %s", l->peer, strerror(rc));
    }
    if (l->fd >= 0)
        close(l->fd);
}

static void rdma_close(tether_ep *tep)
{
    rdma_ep *ep = (rdma_ep *)tep;
    pthread_mutex_lock(&ep->mu);
    drain_sends(ep);
    tether__rdma_side_say(ep, SIDE_BYE, 0, NULL);
    while (ep->live)
        req_release(ep, ep->live);
    for (int p = 0; p < ep->size; p++)
        if (p != ep->rank)
            free_link(ep, &ep->links[p]);
    for (int d = 0; d < ep->ndev; d++)
        tether__rdma_dev_close(ep, &ep->devs[d]);
    tether__ibv_unload(&ep->ibv);
    pthread_mutex_unlock(&ep->mu);
    pthread_mutex_destroy(&ep->mu);
    free(ep->links);
    free(ep->devs);
    free(ep);
}

const tether_transport_ops tether_rdma_ops = {
    .name = "rdma",
    .configured = rdma_configured,
    .usable = rdma_usable,
    .open = rdma_open,
    .caps = rdma_caps,
    .isend = rdma_isend,
    .irecv = rdma_irecv,
    .test = rdma_test,
    .wait = rdma_wait,
    .abort = rdma_abort,
    .close = rdma_close,
};
