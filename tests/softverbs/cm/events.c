/* events.c - event channels, ids, addresses and routes of the connection manager emulator.
 *
 * An address's device is the one that has it (softrdmacm.h). rdma_resolve_addr
 * gives ADDR_ERROR when the source or the destination has no device; rdma_resolve_route gives
 * ROUTE_ERROR towards an address of SOFTVERBS_CM_NO_ROUTE. Faithful where bugs hide: an id is
 * destroyed only with every event it got acked (librdmacm would wait forever: here the process
 * aborts, saying so), and a CONNECT_REQUEST destroyed unanswered is rejected. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../softverbs.h"
#include "softrdmacm.h"

#define MAX_DEVICES 16

static struct ibv_context *contexts[MAX_DEVICES]; /* opened once, kept, as librdmacm does */

void softrdmacm__note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    softverbs_vsay("softrdmacm", 0, fmt, ap);
    va_end(ap);
}

/* A call fails: errno is err and the call returns -1; SOFTVERBS_DEBUG=1 also says why. */
int softrdmacm__fail(int err, const char *fmt, ...)
{
    const char *debug = getenv("SOFTVERBS_DEBUG");
    if (debug && *debug && strcmp(debug, "0")) {
        va_list ap;
        va_start(ap, fmt);
        softverbs_vsay("softrdmacm", err, fmt, ap);
        va_end(ap);
    }
    errno = err;
    return -1;
}

long softrdmacm__rank(void)
{
    const char *v = getenv("SOFTVERBS_RANK");
    if (!v || !*v)
        v = getenv("TETHER_RANK");
    return v && *v ? strtol(v, NULL, 10) : 0;
}

struct ibv_context *softrdmacm__device(const struct sockaddr_in *a, int *gid_index)
{
    union ibv_gid want = {.raw = {[10] = 0xff, [11] = 0xff}};
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_context *found = NULL;
    memcpy(&want.raw[12], &a->sin_addr, 4);
    for (int d = 0; list && d < n && d < MAX_DEVICES && !found; d++) {
        struct in_addr ip;
        if (softverbs_device_address(list[d], &ip) || ip.s_addr != a->sin_addr.s_addr ||
            (!contexts[d] && !(contexts[d] = ibv_open_device(list[d]))))
            continue;
        found = contexts[d];
        *gid_index = 0;
        for (int i = 0; i < 8; i++) {
            union ibv_gid g;
            if (ibv_query_gid(found, 1, i, &g) == 0 && !memcmp(&g, &want, sizeof g))
                *gid_index = i;
        }
    }
    if (list)
        ibv_free_device_list(list);
    return found;
}

static sv_cm_channel *chan(sv_cm_id *id)
{
    return (sv_cm_channel *)id->id.channel;
}

CM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
    sv_cm_channel *c = calloc(1, sizeof *c);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (!c)
        return NULL;
    c->ch.fd = epoll_create1(EPOLL_CLOEXEC);
    c->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->ch.fd < 0 || c->wake < 0 || epoll_ctl(c->ch.fd, EPOLL_CTL_ADD, c->wake, &ev) < 0) {
        int err = errno;
        close(c->ch.fd);
        close(c->wake);
        free(c);
        errno = err;
        return NULL;
    }
    return &c->ch;
}

CM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
    sv_cm_channel *c = (sv_cm_channel *)ch;
    if (c->ids) {
        softrdmacm__note("rdma_destroy_event_channel with ids still on it: librdmacm fails it");
        abort();
    }
    while (c->head) {
        sv_cm_event *e = c->head;
        c->head = e->next;
        free(e);
    }
    close(c->wake);
    close(c->ch.fd);
    free(c);
}

CM_EXPORT int rdma_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **out, void *ctx,
                             enum rdma_port_space ps)
{
    sv_cm_channel *c = (sv_cm_channel *)ch;
    sv_cm_id *id;
    if (ps != RDMA_PS_TCP)
        return softrdmacm__fail(EOPNOTSUPP, "rdma_create_id: only RDMA_PS_TCP is emulated");
    if (!(id = calloc(1, sizeof *id)))
        return softrdmacm__fail(ENOMEM, "rdma_create_id");
    id->id.channel = ch;
    id->id.context = ctx;
    id->id.ps = ps;
    id->id.qp_type = IBV_QPT_RC;
    id->fd = -1;
    id->next = c->ids;
    c->ids = id;
    *out = &id->id;
    return 0;
}

int softrdmacm__watch(sv_cm_id *id, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = id};
    id->fd = fd;
    return epoll_ctl(chan(id)->ch.fd, EPOLL_CTL_ADD, fd, &ev);
}

void softrdmacm__unwatch(sv_cm_id *id)
{
    if (id->fd < 0)
        return;
    epoll_ctl(chan(id)->ch.fd, EPOLL_CTL_DEL, id->fd, NULL);
    close(id->fd);
    id->fd = -1;
}

CM_EXPORT int rdma_destroy_id(struct rdma_cm_id *cid)
{
    sv_cm_id *id = (sv_cm_id *)cid, **at;
    sv_cm_channel *c = chan(id);
    if (id->given != id->acked) {
        softrdmacm__note("rdma_destroy_id with %d of its events not acked: librdmacm waits for "
                         "them forever",
                         id->given - id->acked);
        abort();
    }
    if (id->state == ID_REQ_RCVD) /* never answered: the CM rejects it */
        softrdmacm__send(id, CM_REJ, CM_REJ_CONSUMER, NULL, 0);
    softrdmacm__unwatch(id);
    for (sv_cm_event **e = &c->head; *e;) { /* queued, not yet handed out: gone with it */
        sv_cm_event *x = *e;
        if (x->ev.id == cid || x->ev.listen_id == cid) {
            *e = x->next;
            free(x);
        } else {
            e = &x->next;
        }
    }
    c->tail = NULL;
    for (sv_cm_event *e = c->head; e; e = e->next)
        c->tail = e;
    for (at = &c->ids; *at && *at != id; at = &(*at)->next)
        ;
    if (*at)
        *at = id->next;
    free(id);
    return 0;
}

void softrdmacm__event(sv_cm_id *id, enum rdma_cm_event_type type, int status, const cm_msg *m)
{
    sv_cm_channel *c = chan(id);
    sv_cm_event *e = calloc(1, sizeof *e);
    uint64_t one = 1;
    if (!e) {
        softrdmacm__note("out of memory for an event");
        abort();
    }
    e->ev.id = &id->id;
    e->ev.listen_id = id->listener ? &id->listener->id : NULL;
    e->ev.event = type;
    e->ev.status = status;
    if (m) {
        memcpy(e->pdata, m->pdata, m->pdata_len);
        e->ev.param.conn.private_data = m->pdata_len ? e->pdata : NULL;
        e->ev.param.conn.private_data_len = m->pdata_len;
        e->ev.param.conn.qp_num = m->qpn;
        e->ev.param.conn.responder_resources = m->depth;
        e->ev.param.conn.initiator_depth = m->depth;
        e->ev.param.conn.retry_count = m->retry;
        e->ev.param.conn.rnr_retry_count = m->rnr_retry;
    }
    if (c->tail)
        c->tail->next = e;
    else
        c->head = e;
    c->tail = e;
    if (write(c->wake, &one, sizeof one) < 0)
        softrdmacm__note("eventfd write: %s", strerror(errno));
}

/* Read what id's socket has: a listener's new connection, or message bytes. */
static void progress_id(sv_cm_id *id)
{
    if (id->state == ID_LISTEN) {
        softrdmacm__accept_fd(id);
        return;
    }
    while (id->fd >= 0) {
        ssize_t n =
            recv(id->fd, (char *)&id->in + id->in_got, sizeof id->in - id->in_got, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (n <= 0) { /* the peer's process or id is gone */
            softrdmacm__unwatch(id);
            softrdmacm__on_msg(id, NULL);
            return;
        }
        if ((id->in_got += (size_t)n) == sizeof id->in) {
            id->in_got = 0;
            softrdmacm__on_msg(id, &id->in);
        }
    }
}

static void progress(sv_cm_channel *c, int wait_ms)
{
    struct epoll_event evs[16];
    int n = epoll_wait(c->ch.fd, evs, 16, wait_ms);
    for (int i = 0; i < n; i++)
        if (evs[i].data.ptr)
            progress_id(evs[i].data.ptr);
}

CM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **out)
{
    sv_cm_channel *c = (sv_cm_channel *)ch;
    int nonblock = fcntl(ch->fd, F_GETFL) & O_NONBLOCK;
    uint64_t count;
    progress(c, 0);
    while (!c->head) {
        if (nonblock)
            return softrdmacm__fail(EAGAIN, "rdma_get_cm_event: none waiting");
        progress(c, -1);
    }
    sv_cm_event *e = c->head;
    if (!(c->head = e->next)) {
        c->tail = NULL;
        if (read(c->wake, &count, sizeof count) < 0 && errno != EAGAIN)
            softrdmacm__note("eventfd read: %s", strerror(errno));
    }
    ((sv_cm_id *)e->ev.id)->given++;
    e->ev.id->event = &e->ev;
    *out = &e->ev;
    return 0;
}

CM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *ev)
{
    ((sv_cm_id *)ev->id)->acked++;
    if (ev->id->event == ev)
        ev->id->event = NULL;
    free(ev);
    return 0;
}

/* Attach id to the device behind a; ENODEV when there is none. */
static int attach(sv_cm_id *id, const struct sockaddr_in *a)
{
    int gid_index;
    struct ibv_context *ctx = softrdmacm__device(a, &gid_index);
    if (!ctx)
        return ENODEV;
    id->id.verbs = ctx;
    id->id.port_num = 1;
    ibv_query_gid(ctx, 1, gid_index, &id->path.sgid);
    id->sgid_index = gid_index;
    return 0;
}

CM_EXPORT int rdma_bind_addr(struct rdma_cm_id *cid, struct sockaddr *addr)
{
    sv_cm_id *id = (sv_cm_id *)cid;
    struct sockaddr_in *a = (struct sockaddr_in *)addr;
    socklen_t len = sizeof id->id.route.addr.src_sin;
    int fd, one = 1;
    if (addr->sa_family != AF_INET)
        return softrdmacm__fail(EAFNOSUPPORT, "rdma_bind_addr: only IPv4 is emulated");
    if (attach(id, a))
        return softrdmacm__fail(ENODEV, "rdma_bind_addr: no device has the GID of %s",
                                inet_ntoa(a->sin_addr));
    if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
        return softrdmacm__fail(errno, "rdma_bind_addr: socket");
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, addr, sizeof *a) < 0 || getsockname(fd, &id->id.route.addr.src_addr, &len) < 0) {
        int err = errno;
        close(fd);
        return softrdmacm__fail(err, "rdma_bind_addr(%s)", inet_ntoa(a->sin_addr));
    }
    id->fd = fd;
    id->state = ID_BOUND;
    return 0;
}

CM_EXPORT int rdma_listen(struct rdma_cm_id *cid, int backlog)
{
    sv_cm_id *id = (sv_cm_id *)cid;
    int fd = id->fd;
    if (id->state != ID_BOUND)
        return softrdmacm__fail(EINVAL, "rdma_listen: the id is not bound");
    if (listen(fd, backlog) < 0)
        return softrdmacm__fail(errno, "rdma_listen");
    id->fd = -1;
    id->state = ID_LISTEN;
    return softrdmacm__watch(id, fd) < 0 ? softrdmacm__fail(errno, "rdma_listen: epoll") : 0;
}

CM_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *cid)
{
    return cid->route.addr.src_sin.sin_port;
}

CM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *cid, struct sockaddr *src, struct sockaddr *dst,
                                int timeout_ms)
{
    sv_cm_id *id = (sv_cm_id *)cid;
    int gid_index;
    (void)timeout_ms; /* answered at once */
    if (!src)         /* one machine: the route to any address is loopback, out of its own device */
        src = dst;
    if (src->sa_family != AF_INET || dst->sa_family != AF_INET)
        return softrdmacm__fail(EAFNOSUPPORT, "rdma_resolve_addr: only IPv4 is emulated");
    memcpy(&id->id.route.addr.src_sin, src, sizeof(struct sockaddr_in));
    memcpy(&id->id.route.addr.dst_sin, dst, sizeof(struct sockaddr_in));
    if (attach(id, (struct sockaddr_in *)src))
        softrdmacm__event(id, RDMA_CM_EVENT_ADDR_ERROR, -ENODEV, NULL);
    else if (!softrdmacm__device((struct sockaddr_in *)dst, &gid_index))
        softrdmacm__event(id, RDMA_CM_EVENT_ADDR_ERROR, -EHOSTUNREACH, NULL);
    else {
        id->state = ID_ADDR;
        softrdmacm__event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
    }
    return 0;
}

/* 1 if SOFTVERBS_CM_NO_ROUTE lists a's address */
static int no_route(const struct sockaddr_in *a)
{
    const char *list = getenv("SOFTVERBS_CM_NO_ROUTE");
    const char *ip = inet_ntoa(a->sin_addr);
    size_t n = strlen(ip);
    for (const char *at = list; at && *at; at += strcspn(at, ",") + (at[strcspn(at, ",")] != 0))
        if (strcspn(at, ",") == n && !strncmp(at, ip, n))
            return 1;
    return 0;
}

static uint16_t port_lid(struct ibv_context *ctx)
{
    struct ibv_port_attr pa;
    memset(&pa, 0, sizeof pa);
    return ibv_query_port(ctx, 1, &pa) ? 0 : pa.lid;
}

CM_EXPORT int rdma_resolve_route(struct rdma_cm_id *cid, int timeout_ms)
{
    sv_cm_id *id = (sv_cm_id *)cid;
    int gid_index;
    struct ibv_context *peer;
    (void)timeout_ms;
    if (id->state != ID_ADDR)
        return softrdmacm__fail(EINVAL, "rdma_resolve_route: the address is not resolved");
    if (no_route(&id->id.route.addr.dst_sin)) {
        softrdmacm__event(id, RDMA_CM_EVENT_ROUTE_ERROR, -ETIMEDOUT, NULL);
        return 0;
    }
    peer = softrdmacm__device(&id->id.route.addr.dst_sin, &gid_index);
    ibv_query_gid(peer, 1, gid_index, &id->path.dgid);
    id->path.slid = htons(port_lid(id->id.verbs));
    id->path.dlid = htons(port_lid(peer));
    id->id.route.path_rec = &id->path;
    id->id.route.num_paths = 1;
    id->state = ID_ROUTE;
    softrdmacm__event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
    return 0;
}

CM_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
    static const char *const names[] = {
        "RDMA_CM_EVENT_ADDR_RESOLVED",   "RDMA_CM_EVENT_ADDR_ERROR",
        "RDMA_CM_EVENT_ROUTE_RESOLVED",  "RDMA_CM_EVENT_ROUTE_ERROR",
        "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
        "RDMA_CM_EVENT_CONNECT_ERROR",   "RDMA_CM_EVENT_UNREACHABLE",
        "RDMA_CM_EVENT_REJECTED",        "RDMA_CM_EVENT_ESTABLISHED",
        "RDMA_CM_EVENT_DISCONNECTED",    "RDMA_CM_EVENT_DEVICE_REMOVAL",
        "RDMA_CM_EVENT_MULTICAST_JOIN",  "RDMA_CM_EVENT_MULTICAST_ERROR",
        "RDMA_CM_EVENT_ADDR_CHANGE",     "RDMA_CM_EVENT_TIMEWAIT_EXIT"};
    return (unsigned)event < sizeof names / sizeof names[0] ? names[event] : "UNKNOWN EVENT";
}
