/* link.c - the wire between processes: a Unix stream socket per QP link, and the service thread
 * moving frames.
 *
 * Each QP listens on SOFTVERBS_DIR/qp-<qpn>; binding that path is what makes a QP number unique on
 * the machine. A sending QP connects to its peer's path at its first send and opens with a HELLO
 * naming both QPNs and GIDs, which the receiver checks against its RTR settings for every message.
 * Frames go one way (SEND/WRITE) and answers the other (RESP, RC only) on the same socket. The
 * service thread polls every socket plus an eventfd the verbs calls ring; a closed connection is
 * only marked dead and freed at the end of the thread's round, so no frame handler sees it vanish.
 */
#include "softverbs.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct sv_conn {
    int fd;
    uint64_t id;
    int dead;
    int outbound; /* our QP sends on it; else a peer's link into our QP */
    sv_qp *qp;    /* NULL once the QP is gone */
    int have_hello;
    sv_hello hello;
    sv_hdr rh; /* frame being read: header, then payload */
    size_t rh_got, rp_got;
    unsigned char *rp;
    unsigned char *tx; /* bytes queued to send, tx_off of them already sent */
    size_t tx_len, tx_off, tx_cap;
    sv_conn *next;
};

enum { SLOT_WAKE, SLOT_LISTEN, SLOT_CONN };
typedef struct slot {
    int kind;
    uint64_t id;
} slot;

static sv_conn *conns;
static uint64_t next_conn_id = 1;
static uint32_t next_qpn;
static pthread_t service;
static int wake_fd = -1, stopping;

static void qp_path(uint32_t qpn, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    snprintf(sa->sun_path, sizeof sa->sun_path, "%s/qp-%u", softverbs__env.dir, qpn);
}

static int unix_socket(void)
{
    return socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

/* Bind sa, replacing a socket file left by a dead process; 0, or -1 when someone else has it. */
static int bind_qp(int fd, const struct sockaddr_un *sa)
{
    int probe, alive;
    if (bind(fd, (const struct sockaddr *)sa, sizeof *sa) == 0)
        return 0;
    if (errno != EADDRINUSE || (probe = unix_socket()) < 0)
        return -1;
    alive = connect(probe, (const struct sockaddr *)sa, sizeof *sa) == 0 || errno == EAGAIN;
    close(probe);
    if (alive || unlink(sa->sun_path) < 0)
        return -1;
    return bind(fd, (const struct sockaddr *)sa, sizeof *sa);
}

int softverbs__listen(sv_qp *q)
{
    struct sockaddr_un sa;
    if (mkdir(softverbs__env.dir, 0700) < 0 && errno != EEXIST)
        return softverbs__fail(errno, "ibv_create_qp: mkdir %s", softverbs__env.dir);
    if (!next_qpn)
        next_qpn = 0x100 + ((uint32_t)getpid() * 64u) % 0xff0000u;
    for (int tries = 0; tries < 4096; tries++) {
        uint32_t qpn = next_qpn++;
        int fd = unix_socket();
        if (next_qpn > 0xffffff)
            next_qpn = 0x100;
        if (fd < 0)
            return softverbs__fail(errno, "ibv_create_qp: socket");
        qp_path(qpn, &sa);
        if (bind_qp(fd, &sa) == 0 && listen(fd, 64) == 0) {
            q->qp.qp_num = qpn;
            q->listen_fd = fd;
            return 0;
        }
        close(fd);
    }
    return softverbs__fail(EAGAIN, "ibv_create_qp: no free QP number under %s", softverbs__env.dir);
}

static sv_conn *conn_new(int fd, sv_qp *q, int outbound)
{
    sv_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    c->id = next_conn_id++;
    c->qp = q;
    c->outbound = outbound;
    c->next = conns;
    conns = c;
    return c;
}

static void conn_close(sv_conn *c)
{
    if (c->dead)
        return;
    c->dead = 1;
    c->qp = NULL;
    close(c->fd);
    c->fd = -1;
}

unsigned char *softverbs__link_reserve(sv_conn *c, const sv_hdr *h)
{
    size_t need = sizeof *h + h->len;
    unsigned char *p;
    if (c->tx_off == c->tx_len)
        c->tx_off = c->tx_len = 0;
    if (c->tx_len + need > c->tx_cap) {
        size_t cap = c->tx_cap ? c->tx_cap : 4096;
        while (cap < c->tx_len + need)
            cap *= 2;
        if (!(p = realloc(c->tx, cap)))
            return NULL;
        c->tx = p;
        c->tx_cap = cap;
    }
    p = c->tx + c->tx_len;
    memcpy(p, h, sizeof *h);
    c->tx_len += need;
    return p + sizeof *h;
}

int softverbs__link_flush(sv_conn *c)
{
    while (!c->dead && c->tx_off < c->tx_len) {
        ssize_t n =
            send(c->fd, c->tx + c->tx_off, c->tx_len - c->tx_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0)
            c->tx_off += (size_t)n;
        else if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        else if (errno != EINTR)
            return -1;
    }
    return c->dead ? -1 : 0;
}

int softverbs__link_idle(const sv_conn *c)
{
    return c->tx_off == c->tx_len;
}

const sv_hello *softverbs__link_hello(const sv_conn *c)
{
    return c->have_hello ? &c->hello : NULL;
}

int softverbs__link_connect(sv_qp *q)
{
    struct sockaddr_un sa;
    sv_hdr h = {.magic = SV_MAGIC, .kind = SV_HELLO, .len = sizeof(sv_hello)};
    const struct ibv_ah_attr *ah = &q->attr.ah_attr;
    sv_hello hello = {.src_qpn = q->qp.qp_num,
                      .dst_qpn = q->attr.dest_qp_num,
                      .slid = ah->is_global ? 0 : softverbs__lid(q->dev),
                      .dlid = ah->is_global ? 0 : ah->dlid};
    unsigned char *p;
    int fd;
    if (ah->is_global) {
        hello.sgid = q->dev->gid[ah->grh.sgid_index];
        hello.dgid = ah->grh.dgid;
    }
    if (q->out)
        return SV_LINK_UP;
    if ((fd = unix_socket()) < 0)
        return SV_LINK_BUSY;
    qp_path(q->attr.dest_qp_num, &sa);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int err = errno;
        close(fd);
        /* EAGAIN: the peer's backlog is full (its service thread is behind): try again soon. */
        return err == EAGAIN ? SV_LINK_BUSY : SV_LINK_NONE;
    }
    if (!(q->out = conn_new(fd, q, 1)))
        return SV_LINK_BUSY;
    if (!(p = softverbs__link_reserve(q->out, &h))) {
        softverbs__link_close_out(q);
        return SV_LINK_BUSY;
    }
    memcpy(p, &hello, sizeof hello);
    return SV_LINK_UP;
}

void softverbs__link_close_out(sv_qp *q)
{
    if (q->out)
        conn_close(q->out);
    q->out = NULL;
}

void softverbs__link_close_qp(sv_qp *q)
{
    struct sockaddr_un sa;
    softverbs__link_close_out(q);
    for (sv_conn *c = conns; c; c = c->next)
        if (c->qp == q)
            conn_close(c);
    close(q->listen_fd);
    qp_path(q->qp.qp_num, &sa);
    unlink(sa.sun_path);
}

/* The link failed (EOF, reset, bad frame): a sender learns the link is down, a receiver forgets. */
static void conn_failed(sv_conn *c)
{
    if (c->outbound && c->qp)
        softverbs__link_lost(c->qp);
    conn_close(c);
}

static void frame_in(sv_conn *c)
{
    if (c->rh.kind == SV_HELLO && !c->outbound && c->rh.len == sizeof c->hello) {
        memcpy(&c->hello, c->rp, sizeof c->hello);
        c->have_hello = 1;
    } else if ((c->rh.kind == SV_RESP) == c->outbound) {
        softverbs__on_frame(c, c->qp, &c->rh, c->rp);
    }
    free(c->rp);
    c->rp = NULL;
    c->rh_got = c->rp_got = 0;
}

/* Read what the socket has, handling each whole frame; -1 when the link is gone or corrupt. */
static int conn_read(sv_conn *c)
{
    while (!c->dead) {
        int in_hdr = c->rh_got < sizeof c->rh;
        unsigned char *dst = in_hdr ? (unsigned char *)&c->rh + c->rh_got : c->rp + c->rp_got;
        size_t want = in_hdr ? sizeof c->rh - c->rh_got : c->rh.len - c->rp_got;
        ssize_t n = want ? recv(c->fd, dst, want, MSG_DONTWAIT) : 0;
        if (want && n == 0)
            return -1;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : errno == EINTR ? 0 : -1;
        if (in_hdr) {
            c->rh_got += (size_t)n;
            if (c->rh_got < sizeof c->rh)
                continue;
            if (c->rh.magic != SV_MAGIC || c->rh.len > softverbs__env.prof.max_msg ||
                !(c->rp = malloc(c->rh.len ? c->rh.len : 1)))
                return -1;
        } else {
            c->rp_got += (size_t)n;
        }
        if (c->rp_got == c->rh.len)
            frame_in(c);
    }
    return 0;
}

static sv_conn *conn_by_id(uint64_t id)
{
    for (sv_conn *c = conns; c; c = c->next)
        if (c->id == id && !c->dead)
            return c;
    return NULL;
}

static sv_qp *qp_by_id(uint64_t id)
{
    for (sv_qp *q = softverbs__qps; q; q = q->next)
        if (q->id == id)
            return q;
    return NULL;
}

static void accept_links(sv_qp *q)
{
    int fd;
    while ((fd = accept4(q->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
        conn_new(fd, q, 0);
}

static void handle(const struct pollfd *pfd, const slot *s)
{
    sv_qp *q;
    sv_conn *c;
    if (!pfd->revents)
        return;
    if (s->kind == SLOT_WAKE) {
        uint64_t v;
        if (read(wake_fd, &v, sizeof v) < 0 && errno != EAGAIN)
            softverbs__note("service thread: read eventfd: %s", strerror(errno));
    } else if (s->kind == SLOT_LISTEN) {
        if ((q = qp_by_id(s->id)) != NULL)
            accept_links(q);
    } else if ((c = conn_by_id(s->id)) != NULL) {
        if (((pfd->revents & (POLLIN | POLLHUP | POLLERR)) && conn_read(c) < 0) ||
            ((pfd->revents & POLLOUT) && softverbs__link_flush(c) < 0))
            conn_failed(c);
    }
}

/* Timers, queued answers, sends waiting for a drained socket; then free closed links. */
static uint64_t round_end(uint64_t now)
{
    uint64_t due = softverbs__fault_tick(now), cq_due;
    sv_conn **pp = &conns;
    for (sv_conn *c = conns; c; c = c->next)
        if (!c->dead && softverbs__link_flush(c) < 0)
            conn_failed(c);
    for (sv_qp *q = softverbs__qps; q; q = q->next) {
        uint64_t d;
        softverbs__qp_kick(q, now);
        d = softverbs__qp_due(q);
        due = d && (!due || d < due) ? d : due;
    }
    cq_due = softverbs__cq_tick(now); /* after the kicks: they may have made completions */
    due = cq_due && (!due || cq_due < due) ? cq_due : due;
    while (*pp) {
        sv_conn *c = *pp;
        if (c->dead) {
            *pp = c->next;
            free(c->rp);
            free(c->tx);
            free(c);
        } else {
            pp = &c->next;
        }
    }
    return due;
}

/* The poll set: the eventfd, each QP's listening socket, each live link. */
static int poll_set(struct pollfd **pfd, slot **slots, size_t *cap)
{
    size_t n = 1;
    for (sv_qp *q = softverbs__qps; q; q = q->next)
        n++;
    for (sv_conn *c = conns; c; c = c->next)
        n++;
    if (n > *cap) {
        struct pollfd *p = realloc(*pfd, n * sizeof **pfd);
        slot *s = p ? realloc(*slots, n * sizeof **slots) : NULL;
        if (p)
            *pfd = p;
        if (!s)
            return -1;
        *slots = s;
        *cap = n;
    }
    n = 0;
    (*pfd)[n] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
    (*slots)[n++] = (slot){SLOT_WAKE, 0};
    for (sv_qp *q = softverbs__qps; q; q = q->next) {
        (*pfd)[n] = (struct pollfd){.fd = q->listen_fd, .events = POLLIN};
        (*slots)[n++] = (slot){SLOT_LISTEN, q->id};
    }
    for (sv_conn *c = conns; c; c = c->next) {
        short ev = (short)(POLLIN | (softverbs__link_idle(c) ? 0 : POLLOUT));
        (*pfd)[n] = (struct pollfd){.fd = c->fd, .events = ev};
        (*slots)[n++] = (slot){SLOT_CONN, c->id};
    }
    return (int)n;
}

static void *service_main(void *arg)
{
    struct pollfd *pfd = NULL;
    slot *slots = NULL;
    size_t cap = 0;
    uint64_t due = 0;
    (void)arg;
    pthread_mutex_lock(&softverbs__lock);
    while (!stopping) {
        int n = poll_set(&pfd, &slots, &cap);
        uint64_t now = softverbs__now_us(), wait = due > now ? due - now : 0;
        struct timespec ts = {.tv_sec = (time_t)(wait / 1000000u),
                              .tv_nsec = (long)(wait % 1000000u) * 1000};
        pthread_mutex_unlock(&softverbs__lock);
        /* No deadline means nothing is due: only a verbs call or a socket can make work. */
        if (n > 0 && ppoll(pfd, (nfds_t)n, due ? &ts : NULL, NULL) < 0 && errno != EINTR)
            softverbs__note("service thread: ppoll: %s", strerror(errno));
        if (n < 0)
            usleep(1000); /* out of memory for the poll set: let the verbs calls free some */
        pthread_mutex_lock(&softverbs__lock);
        for (int i = 0; i < n && !stopping; i++)
            handle(&pfd[i], &slots[i]);
        due = round_end(softverbs__now_us());
    }
    pthread_mutex_unlock(&softverbs__lock);
    free(pfd);
    free(slots);
    return NULL;
}

void softverbs__wake(void)
{
    uint64_t one = 1;
    if (wake_fd >= 0 && write(wake_fd, &one, sizeof one) < 0 && errno != EAGAIN)
        softverbs__note("wake: write eventfd: %s", strerror(errno));
}

int softverbs__service_start(void)
{
    sigset_t all, old;
    int rc;
    if ((wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        return softverbs__fail(errno, "ibv_open_device: eventfd");
    /* Signals belong to the application's threads, never to ours. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&service, NULL, service_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        close(wake_fd);
        wake_fd = -1;
        return softverbs__fail(rc, "ibv_open_device: pthread_create");
    }
    return 0;
}

void softverbs__service_stop(void)
{
    pthread_mutex_lock(&softverbs__lock);
    stopping = 1;
    pthread_mutex_unlock(&softverbs__lock);
    softverbs__wake();
    pthread_join(service, NULL);
    pthread_mutex_lock(&softverbs__lock);
    close(wake_fd);
    wake_fd = -1;
    stopping = 0;
    round_end(softverbs__now_us());
    pthread_mutex_unlock(&softverbs__lock);
}
