/* backends/net/setup.c - forming the links of a plan: parallel connects, accepts, hellos. */
#include "setup.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/params.h"
#include "core/random.h"
#include "handshake.h"

#define BACKOFF_FIRST_MS 10
#define BACKOFF_MAX_MS 1000

typedef enum {
    C_WAIT,       /* outgoing: before the next connect attempt */
    C_CONNECTING, /* outgoing: connect() under way */
    C_SEND,       /* sending our message of the handshake (handshake.h), step says which */
    C_RECV,       /* receiving the peer's message of the handshake */
    C_DONE,       /* the link is up and stored in the result */
    C_GONE,       /* an incoming stray, dropped; its entry is reused */
} conn_state;

typedef struct conn {
    conn_state st;
    int outgoing;
    int fd;
    int peer, link; /* link: index among the links the connecting side opens */
    int cand;       /* outgoing: which address of the peer this attempt uses */
    int tries;      /* outgoing: failed attempts so far, for the backoff */
    int64_t at;     /* C_WAIT: next attempt; C_RECV: deadline of the peer's message */
    int pollix;     /* index in the pollfd array, -1 when not polled */
    int step;       /* the message of the handshake in flight */
    size_t n;       /* bytes of msgs[step] sent or received */
    tether__hs_msgs msgs;
    char what[TETHER__ADDR_TEXT + 32]; /* "rank 3 (10.0.0.3:5003)" or the remote address */
} conn;

typedef struct setup {
    const tether__net_plan *p;
    tether__net_links *out;
    tether__hello mine;
    const char *token; /* the key of every proof */
    conn *c;
    int nc, cap;
    int missing; /* links not up yet */
    struct pollfd *pfd;
    int npfd, npfd_cap;
    /* why the latest outgoing attempt failed, for the timeout message */
    char last_err[TETHER__ADDR_TEXT + 160];
    int spare_fd; /* held back to accept-and-close one connection when out of descriptors */
    int shed;     /* stray connections closed for want of descriptors, for one warning */
} setup;

/* The slot of a link in its pair's numbering (setup.h): the lower rank's links come first. */
static int slot_of(const setup *s, int peer, int link, int outgoing)
{
    const tether__net_plan *p = s->p;
    int lower_opens = p->rank < peer ? p->out_links[peer] : p->in_links[peer];
    return ((p->rank < peer) == outgoing) ? link : lower_opens + link;
}

/* Link k to peer stays on address k (one link per cable): the ring's every link, anyone's to a
 * peer with several links (the mesh's pairs with several cables); else a link tries the peer's
 * addresses in turn. */
static int pinned(const tether__net_plan *p, int peer)
{
    return p->pin_addrs || p->out_links[peer] > 1;
}

static conn *conn_add(setup *s)
{
    for (int i = 0; i < s->nc; i++)
        if (s->c[i].st == C_GONE)
            return &s->c[i];
    if (s->nc == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        conn *c = realloc(s->c, (size_t)cap * sizeof *c);
        if (!c)
            return NULL;
        s->c = c;
        s->cap = cap;
    }
    return &s->c[s->nc++];
}

static void link_up(setup *s, conn *c)
{
    int slot = slot_of(s, c->peer, c->link, c->outgoing);
    int *fd = &s->out->fds[c->peer][slot];
    if (*fd >= 0) /* the peer gave up on an earlier try of this link and made a new one */
        close(*fd);
    else
        s->missing--;
    *fd = c->fd;
    s->out->dialed[c->peer][slot] = (unsigned char)c->outgoing;
    c->fd = -1;
    c->st = C_DONE;
    TLOG_INFO("link %d with rank %d: %s %s", slot, c->peer,
              c->outgoing ? "connected to" : "accepted from", c->what);
}

/* Schedule the next attempt of an outgoing link on the peer's next address, after a backoff. */
static void retry_later(setup *s, conn *c, const char *why)
{
    snprintf(s->last_err, sizeof s->last_err, "%s: %s", c->what, why);
    TLOG_TRACE("connect attempt failed, retrying: %s", s->last_err);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    if (!pinned(s->p, c->peer))
        c->cand = (c->cand + 1) % s->p->naddrs[c->peer];
    int backoff = BACKOFF_FIRST_MS << (c->tries < 7 ? c->tries : 7);
    c->tries++;
    c->at = tether__net_now_ms() + (backoff < BACKOFF_MAX_MS ? backoff : BACKOFF_MAX_MS);
    c->st = C_WAIT;
}

/* An incoming connection that is not one of our links: log it and forget it. */
static void drop(conn *c, int warn, const char *why)
{
    if (warn)
        TLOG_WARN("dropped a connection from %s: %s", c->what, why);
    else
        TLOG_INFO("dropped a connection from %s: %s", c->what, why);
    close(c->fd);
    c->fd = -1;
    c->st = C_GONE;
}

/* Out of file descriptors: close the oldest incoming connection that has not said its hello (a
 * stray of a flood, or a peer that will try again). 0 when there is none. */
static int shed_stray(setup *s)
{
    conn *oldest = NULL;
    for (int i = 0; i < s->nc; i++) {
        conn *c = &s->c[i];
        if (!c->outgoing && c->st == C_RECV && (!oldest || c->at < oldest->at))
            oldest = c;
    }
    if (!oldest)
        return 0;
    if (!s->shed++)
        TLOG_WARN("rank %d: out of file descriptors (ulimit -n) with connections that have not "
                  "identified themselves: closing the oldest ones, as long as it lasts",
                  s->p->rank);
    drop(oldest, 0, "closed for want of file descriptors before it said its hello");
    return 1;
}

static int start_connect(setup *s, conn *c)
{
    const tether__hostaddr *a = &s->p->addrs[c->peer][c->cand];
    struct sockaddr_storage ss;
    socklen_t len;
    snprintf(c->what, sizeof c->what, "rank %d (%s:%d)", c->peer, a->host, a->port);
    TRY(tether__net_resolve(a->host, a->port, &ss, &len));
    int rc = tether__net_connect_start(&ss, len, c->what, &c->fd);
    if (rc < 0)
        return rc;
    if (rc > 0 && tether__net_out_of_fds(rc))
        shed_stray(s); /* room for the next attempt */
    if (rc > 0)
        retry_later(s, c, strerror(rc));
    else
        c->st = C_CONNECTING;
    return TETHER_OK;
}

static int fresh_nonce(const setup *s, unsigned char nonce[TETHER__NONCE_SIZE])
{
    if (tether__random_bytes(nonce, TETHER__NONCE_SIZE) < 0)
        return tether__fail(TETHER_ENET, "rank %d: no random nonce for a handshake: %s", s->p->rank,
                            strerror(errno));
    return TETHER_OK;
}

/* Send msgs[step], which the caller filled. */
static void send_step(conn *c, int step)
{
    c->step = step;
    c->n = 0;
    c->st = C_SEND;
}

/* Best effort, for a connection about to be dropped or failed: the peer learns why, a full socket
 * buffer just loses the message. */
static void send_now(conn *c, const unsigned char msg[TETHER__HELLO_SIZE])
{
    if (send(c->fd, msg, TETHER__HELLO_SIZE, TETHER__SEND_FLAGS) < 0)
        TLOG_TRACE("message to %s not sent: %s", c->what, strerror(errno));
}

static void refuse(conn *c, uint32_t status)
{
    unsigned char msg[TETHER__HELLO_SIZE];
    tether__hs_status_msg(status, msg);
    send_now(c, msg);
}

static int connected(setup *s, conn *c)
{
    int err = tether__net_connect_result(c->fd);
    if (err) {
        retry_later(s, c, strerror(err));
        return TETHER_OK;
    }
    TRY(tether__net_tune(c->fd, c->what));
    tether__hello h = s->mine;
    h.link = c->link;
    h.nlinks = s->p->out_links[c->peer];
    TRY(fresh_nonce(s, h.nonce));
    tether__hello_encode(&h, c->msgs[TETHER__HS_HELLO]);
    send_step(c, TETHER__HS_HELLO);
    return TETHER_OK;
}

/* Move bytes of the message in flight; 1 when all TETHER__HELLO_SIZE moved, 0 when more is to come,
 * -1 with errno (0 for EOF) when the connection failed. */
static int move_bytes(conn *c, int sending)
{
    unsigned char *buf = c->msgs[c->step];
    ssize_t r = sending ? send(c->fd, buf + c->n, TETHER__HELLO_SIZE - c->n, TETHER__SEND_FLAGS)
                        : recv(c->fd, buf + c->n, TETHER__HELLO_SIZE - c->n, 0);
    if (r > 0) {
        c->n += (size_t)r;
        return c->n == TETHER__HELLO_SIZE;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    if (r == 0)
        errno = 0;
    return -1;
}

/* Outgoing: the acceptor refused our hello (its output says why). */
static int refused(const setup *s, const conn *c, uint32_t status)
{
    if (status == TETHER__HS_BAD_LINK)
        return tether__fail(TETHER_EPEER,
                            "rank %d: %s refused our connection: %s (rank %d opens %d link%s to "
                            "rank %d); see its output",
                            s->p->rank, c->what, tether__hs_status_text(status), s->p->rank,
                            s->p->out_links[c->peer], s->p->out_links[c->peer] == 1 ? "" : "s",
                            c->peer);
    return tether__fail(TETHER_EPEER, "rank %d: %s refused our connection: %s; see its output",
                        s->p->rank, c->what, tether__hs_status_text(status));
}

/* Outgoing: the acceptor's challenge arrived. It must prove the token and agree with us; then we
 * prove it too, with our verdict. */
static int check_challenge(setup *s, conn *c)
{
    tether__hello h;
    char why[256];
    if (tether__hello_decode(c->msgs[TETHER__HS_CHALLENGE], &h) < 0) {
        retry_later(s, c,
                    "answered with something that is not a tether hello (another program on "
                    "this port?)");
        return TETHER_OK;
    }
    if (h.status != TETHER__HS_OK)
        return refused(s, c, h.status);
    if (!tether__hs_verify(s->token, c->msgs, TETHER__HS_CHALLENGE))
        return tether__fail(TETHER_EPEER,
                            "rank %d: %s does not know this job's token: another job listens "
                            "there, or %s differs between ranks",
                            s->p->rank, c->what, TETHER__VAR(JOB_TOKEN));
    uint32_t verdict = tether__hello_check(&h, &s->mine, why, sizeof why);
    if (verdict == TETHER__HS_OK && h.rank != c->peer) {
        verdict = TETHER__HS_BAD_LINK;
        snprintf(why, sizeof why, "it says it is rank %d; check the hostfile", h.rank);
    }
    tether__hs_status_msg(verdict, c->msgs[TETHER__HS_PROOF]);
    tether__hs_prove(s->token, c->msgs, TETHER__HS_PROOF);
    if (verdict != TETHER__HS_OK) {
        send_now(c, c->msgs[TETHER__HS_PROOF]);
        return tether__fail(TETHER_EPEER, "rank %d: %s answered with %s", s->p->rank, c->what, why);
    }
    send_step(c, TETHER__HS_PROOF);
    return TETHER_OK;
}

/* Outgoing: the acceptor's verdict on our hello. */
static int check_verdict(setup *s, conn *c)
{
    tether__hello h;
    if (tether__hello_decode(c->msgs[TETHER__HS_VERDICT], &h) < 0) {
        retry_later(s, c, "answered our proof with something that is not a tether message");
        return TETHER_OK;
    }
    if (h.status != TETHER__HS_OK)
        return refused(s, c, h.status);
    link_up(s, c);
    return TETHER_OK;
}

/* Incoming: which rank and link a hello claims, if this side expects it. */
static int expected_link(const setup *s, const tether__hello *h)
{
    const tether__net_plan *p = s->p;
    return h->rank >= 0 && h->rank < p->size && h->rank != p->rank && h->link >= 0 &&
           h->link < p->in_links[h->rank] && h->nlinks == p->in_links[h->rank];
}

/* The address messages name a peer by, where the plan has none (a peer that only connects to this
 * rank, such as rank 0 of a two-rank ring for rank 1): where it listens, if its hello says, else
 * where it connected from. */
static void name_peer(setup *s, const tether__hello *h, const char *from)
{
    char *addr = s->out->addr[h->rank];
    if (s->p->naddrs[h->rank] > 0)
        return;
    if (h->announce_host[0])
        snprintf(addr, TETHER__ADDR_TEXT, "%s:%d", h->announce_host, h->announce_port);
    else
        snprintf(addr, TETHER__ADDR_TEXT, "%.*s", TETHER__ADDR_TEXT - 1, from);
}

/* Incoming: a full hello arrived. Garbage and another protocol version are dropped; anything else
 * gets a challenge, since nothing it says counts before it proved the token. */
static int check_hello(setup *s, conn *c)
{
    tether__hello h, challenge = s->mine;
    if (tether__hello_decode(c->msgs[TETHER__HS_HELLO], &h) < 0) {
        drop(c, 1, "it sent garbage, not a tether hello");
        return TETHER_OK;
    }
    if (h.version != TETHER__PROTO_VERSION) {
        char why[96];
        snprintf(why, sizeof why, "protocol version %u, this rank speaks %u", h.version,
                 TETHER__PROTO_VERSION);
        refuse(c, TETHER__HS_BAD_VERSION);
        drop(c, 1, why);
        return TETHER_OK;
    }
    TRY(fresh_nonce(s, challenge.nonce));
    tether__hello_encode(&challenge, c->msgs[TETHER__HS_CHALLENGE]);
    tether__hs_prove(s->token, c->msgs, TETHER__HS_CHALLENGE);
    send_step(c, TETHER__HS_CHALLENGE);
    return TETHER_OK;
}

/* Incoming: the connector's proof arrived. Only a connector that proved the token is a rank of
 * this job; one that disagrees with us (or we with it) fails the set-up, since it would fail
 * anyway, later and less clearly. */
static int check_proof(setup *s, conn *c)
{
    tether__hello h, proof;
    char why[256];
    if (tether__hello_decode(c->msgs[TETHER__HS_PROOF], &proof) < 0 ||
        !tether__hs_verify(s->token, c->msgs, TETHER__HS_PROOF)) {
        refuse(c, TETHER__HS_BAD_TOKEN);
        snprintf(why, sizeof why,
                 "wrong job token: a connection from another job, or %s differs between ranks",
                 TETHER__VAR(JOB_TOKEN));
        drop(c, 1, why);
        return TETHER_OK;
    }
    tether__hello_decode(c->msgs[TETHER__HS_HELLO], &h);
    uint32_t verdict = tether__hello_check(&h, &s->mine, why, sizeof why);
    if (verdict == TETHER__HS_OK && !expected_link(s, &h)) {
        verdict = TETHER__HS_BAD_LINK;
        if (h.rank >= 0 && h.rank < s->p->size && h.rank != s->p->rank &&
            h.nlinks != s->p->in_links[h.rank])
            snprintf(why, sizeof why,
                     "%d link%s from rank %d to rank %d, where rank %d counts %d (the two see "
                     "different cables between them: check both hosts' addresses in the hostfile "
                     "and their subnets)",
                     h.nlinks, h.nlinks == 1 ? "" : "s", h.rank, s->p->rank, s->p->rank,
                     s->p->in_links[h.rank]);
        else
            snprintf(why, sizeof why, "rank %d link %d of %d, which this rank does not expect",
                     h.rank, h.link, h.nlinks);
    }
    if (verdict == TETHER__HS_OK && proof.status != TETHER__HS_OK)
        return tether__fail(TETHER_EPEER, "rank %d: rank %d (%s) in the same job refused us: %s",
                            s->p->rank, h.rank, c->what, tether__hs_status_text(proof.status));
    if (verdict != TETHER__HS_OK) {
        refuse(c, verdict);
        return tether__fail(TETHER_EPEER,
                            "rank %d: connection from rank %d (%s) in the same job: it has %s",
                            s->p->rank, h.rank, c->what, why);
    }
    c->peer = h.rank;
    c->link = h.link;
    char from[sizeof c->what];
    snprintf(from, sizeof from, "%s", c->what);
    snprintf(c->what, sizeof c->what, "rank %d (%.*s)", h.rank, TETHER__ADDR_TEXT, from);
    snprintf(s->out->announced[h.rank].host, sizeof s->out->announced[h.rank].host, "%s",
             h.announce_host);
    s->out->announced[h.rank].port = h.announce_port;
    name_peer(s, &h, from);
    TRY(tether__net_tune(c->fd, c->what));
    tether__hs_status_msg(TETHER__HS_OK, c->msgs[TETHER__HS_VERDICT]);
    send_step(c, TETHER__HS_VERDICT);
    return TETHER_OK;
}

/* A connection in flight failed: an outgoing one tries again, an incoming one is forgotten. */
static void conn_failed(setup *s, conn *c, const char *why)
{
    if (c->outgoing)
        retry_later(s, c, why);
    else
        drop(c, 0, why);
}

/* A whole message of the handshake went out or came in: the next state. */
static int message_moved(setup *s, conn *c, int64_t now)
{
    if (c->st == C_RECV) {
        switch (c->step) {
        case TETHER__HS_HELLO:
            return check_hello(s, c);
        case TETHER__HS_CHALLENGE:
            return check_challenge(s, c);
        case TETHER__HS_PROOF:
            return check_proof(s, c);
        default:
            return check_verdict(s, c);
        }
    }
    if (c->step == TETHER__HS_VERDICT) { /* the acceptor's verdict went out: the link is up */
        link_up(s, c);
        return TETHER_OK;
    }
    c->step++;
    c->n = 0;
    c->st = C_RECV;
    c->at = now + TETHER__HELLO_TIMEOUT_MS;
    return TETHER_OK;
}

/* One step of a connection in flight, after poll said revents (0: only its timer may have run). */
static int step(setup *s, conn *c, short revents, int64_t now)
{
    if (c->st == C_WAIT && now >= c->at)
        return start_connect(s, c);
    if (c->st == C_RECV && now >= c->at) {
        conn_failed(s, c,
                    c->step == TETHER__HS_HELLO ? "no hello within 2 s"
                                                : "no answer within 2 s in the handshake");
        return TETHER_OK;
    }
    if (!revents)
        return TETHER_OK;
    if (c->st == C_CONNECTING)
        return connected(s, c);
    int r = move_bytes(c, c->st == C_SEND);
    if (r < 0)
        conn_failed(s, c, errno ? strerror(errno) : "closed the connection");
    return r > 0 ? message_moved(s, c, now) : TETHER_OK;
}

/* Out of descriptors with no stray to shed: accept one connection into the spare descriptor and
 * close it, so the listener's queue moves (else poll would report it ready forever). */
static void refuse_one(setup *s, int lfd)
{
    int fd;
    char what[TETHER__ADDR_TEXT];
    if (s->spare_fd >= 0)
        close(s->spare_fd);
    if (tether__net_accept(lfd, &fd, what, sizeof what) == 1) {
        TLOG_INFO("closed a connection from %s at once: out of file descriptors", what);
        close(fd);
    }
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static int accept_all(setup *s, int lfd)
{
    int fd, got;
    char what[TETHER__ADDR_TEXT];
    while ((got = tether__net_accept(lfd, &fd, what, sizeof what)) > 0) {
        if (got == 2) { /* out of descriptors: a flood must not fail the rank */
            if (!shed_stray(s)) {
                refuse_one(s, lfd);
                return TETHER_OK;
            }
            continue;
        }
        conn *c = conn_add(s);
        if (!c) {
            close(fd);
            return tether__fail(TETHER_ENOMEM, "out of memory accepting a connection");
        }
        memset(c, 0, sizeof *c);
        c->fd = fd;
        c->st = C_RECV;
        c->peer = -1;
        c->pollix = -1;
        c->at = tether__net_now_ms() + TETHER__HELLO_TIMEOUT_MS;
        snprintf(c->what, sizeof c->what, "%s", what);
        TLOG_TRACE("accepted a connection from %s, waiting for its hello", c->what);
    }
    return got;
}

/* Room in the pollfd array for every listener and connection (accepts add connections). */
static int reserve_pfd(setup *s)
{
    int want = s->p->nlisten + s->nc;
    if (want <= s->npfd_cap)
        return TETHER_OK;
    struct pollfd *p = realloc(s->pfd, (size_t)want * sizeof *p);
    if (!p)
        return tether__fail(TETHER_ENOMEM, "out of memory polling %d connections", want);
    s->pfd = p;
    s->npfd_cap = want;
    return TETHER_OK;
}

/* Fill the pollfd array; returns the poll timeout in ms (the nearest timer). */
static int poll_set(setup *s, int64_t now, int64_t deadline)
{
    int64_t next = deadline;
    s->npfd = 0;
    for (int i = 0; i < s->p->nlisten; i++)
        s->pfd[s->npfd++] = (struct pollfd){.fd = s->p->listen_fds[i], .events = POLLIN};
    for (int i = 0; i < s->nc; i++) {
        conn *c = &s->c[i];
        c->pollix = -1;
        if (c->st == C_WAIT || c->st == C_RECV)
            next = c->at < next ? c->at : next;
        if (c->st == C_CONNECTING || c->st == C_SEND || c->st == C_RECV) {
            c->pollix = s->npfd;
            s->pfd[s->npfd++] =
                (struct pollfd){.fd = c->fd, .events = c->st == C_RECV ? POLLIN : POLLOUT};
        }
    }
    return next > now ? (int)(next - now) : 0;
}

/* "to rank 3 (...: Connection refused), from rank 0" for the timeout message. */
static void describe_missing(const setup *s, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->nc && used < n; i++)
        if (s->c[i].outgoing && s->c[i].st != C_DONE)
            used +=
                (size_t)snprintf(buf + used, n - used, "%sto %s", used ? ", " : "", s->c[i].what);
    for (int peer = 0; peer < s->p->size && used < n; peer++) {
        int lower_opens = s->p->rank < peer ? s->p->out_links[peer] : s->p->in_links[peer];
        int first = s->p->rank < peer ? lower_opens : 0;
        for (int k = 0; k < s->p->in_links[peer] && used < n; k++)
            if (s->out->fds[peer][first + k] < 0) {
                used += (size_t)snprintf(buf + used, n - used, "%sfrom rank %d", used ? ", " : "",
                                         peer);
                break;
            }
    }
}

static int run(setup *s)
{
    int64_t deadline = tether__net_now_ms() + s->p->timeout_ms;
    while (s->missing > 0) {
        int64_t now = tether__net_now_ms();
        if (now >= deadline) {
            char missing[512];
            describe_missing(s, missing, sizeof missing);
            return tether__fail(
                TETHER_ETIMEDOUT,
                "rank %d: links still missing after %d s: %s (last "
                "connect error: %s); check that every rank started and the hostfile "
                "addresses",
                s->p->rank, s->p->timeout_ms / 1000, missing,
                s->last_err[0] ? s->last_err : "none");
        }
        TRY(reserve_pfd(s));
        int timeout = poll_set(s, now, deadline);
        if (poll(s->pfd, (nfds_t)s->npfd, timeout) < 0 && errno != EINTR)
            return tether__fail(TETHER_ENET, "rank %d: poll() during set-up: %s", s->p->rank,
                                strerror(errno));
        now = tether__net_now_ms();
        int nc = s->nc; /* connections accepted below are polled next round */
        for (int i = 0; i < s->p->nlisten; i++)
            if (s->pfd[i].revents)
                TRY(accept_all(s, s->pfd[i].fd));
        for (int i = 0; i < nc; i++) {
            conn *c = &s->c[i];
            short rev = c->pollix >= 0 ? s->pfd[c->pollix].revents : 0;
            if (c->st != C_DONE && c->st != C_GONE)
                TRY(step(s, c, rev, now));
        }
    }
    return TETHER_OK;
}

static int alloc_result(const tether__net_plan *p, tether__net_links *l)
{
    memset(l, 0, sizeof *l);
    l->size = p->size;
    l->timeout_ms = p->timeout_ms;
    l->nlinks = calloc((size_t)p->size, sizeof *l->nlinks);
    l->fds = calloc((size_t)p->size, sizeof *l->fds);
    l->dialed = calloc((size_t)p->size, sizeof *l->dialed);
    l->addr = calloc((size_t)p->size, sizeof *l->addr);
    l->announced = calloc((size_t)p->size, sizeof *l->announced);
    if (!l->nlinks || !l->fds || !l->dialed || !l->addr || !l->announced)
        return tether__fail(TETHER_ENOMEM, "out of memory for the links of %d ranks", p->size);
    for (int peer = 0; peer < p->size; peer++) {
        int n = peer == p->rank ? 0 : p->out_links[peer] + p->in_links[peer];
        l->nlinks[peer] = n;
        l->fds[peer] = malloc((size_t)(n ? n : 1) * sizeof **l->fds);
        l->dialed[peer] = calloc((size_t)(n ? n : 1), 1);
        if (!l->fds[peer] || !l->dialed[peer])
            return tether__fail(TETHER_ENOMEM, "out of memory for the links of %d ranks", p->size);
        for (int k = 0; k < n; k++)
            l->fds[peer][k] = -1;
        if (p->naddrs[peer] > 0)
            snprintf(l->addr[peer], sizeof l->addr[peer], "%s:%d", p->addrs[peer][0].host,
                     p->addrs[peer][0].port);
        else
            snprintf(l->addr[peer], sizeof l->addr[peer], "address unknown");
    }
    return TETHER_OK;
}

/* One outgoing connection per link this rank opens, all due at once. */
static int plan_outgoing(setup *s)
{
    const tether__net_plan *p = s->p;
    for (int peer = 0; peer < p->size; peer++) {
        s->missing += peer == p->rank ? 0 : p->out_links[peer] + p->in_links[peer];
        if (peer != p->rank && p->out_links[peer] > 0 && p->naddrs[peer] < 1)
            return tether__fail(TETHER_ECONFIG, "rank %d: no address to connect to rank %d",
                                p->rank, peer);
        for (int k = 0; peer != p->rank && k < p->out_links[peer]; k++) {
            if (p->redial && !(p->redial[peer] >> k & 1))
                continue;
            conn *c = conn_add(s);
            if (!c)
                return tether__fail(TETHER_ENOMEM, "out of memory planning %d links", p->size);
            memset(c, 0, sizeof *c);
            c->outgoing = 1;
            c->fd = -1;
            c->peer = peer;
            c->link = k;
            c->cand = pinned(p, peer) ? k % p->naddrs[peer] : 0;
            c->pollix = -1;
            c->st = C_WAIT;
            c->at = 0;
            snprintf(c->what, sizeof c->what, "rank %d (%s)", peer, s->out->addr[peer]);
        }
    }
    if (p->redial) /* a rejoin: any one link will do */
        s->missing = 1;
    return TETHER_OK;
}

static void init_hello(setup *s)
{
    const tether__net_plan *p = s->p;
    memset(&s->mine, 0, sizeof s->mine);
    s->mine.version = TETHER__PROTO_VERSION;
    s->mine.rank = p->rank;
    s->mine.size = p->size;
    snprintf(s->mine.backend, sizeof s->mine.backend, "%s", p->backend ? p->backend : "");
    snprintf(s->mine.settings, sizeof s->mine.settings, "%s", p->settings);
    if (p->announce_host) {
        snprintf(s->mine.announce_host, sizeof s->mine.announce_host, "%s", p->announce_host);
        s->mine.announce_port = p->announce_port;
    }
}

int tether__net_setup(const tether__net_plan *plan, tether__net_links *out)
{
    setup s;
    int rc;
    memset(&s, 0, sizeof s);
    s.p = plan;
    s.out = out;
    s.token = plan->token ? plan->token : "";
    s.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    init_hello(&s);
    TRY_GOTO(rc, alloc_result(plan, out), done);
    TRY_GOTO(rc, plan_outgoing(&s), done);
    rc = run(&s);
done:
    for (int i = 0; i < s.nc; i++)
        if (s.c[i].fd >= 0)
            close(s.c[i].fd);
    free(s.c);
    free(s.pfd);
    if (s.spare_fd >= 0)
        close(s.spare_fd);
    if (rc < 0)
        tether__net_links_free(out);
    return rc;
}

int tether__net_plan_init(tether__net_plan *p, int rank, int size, const tether__config *cfg)
{
    memset(p, 0, sizeof *p);
    p->rank = rank;
    p->size = size;
    p->token = cfg->job_token;
    p->timeout_ms = cfg->timeout_ms;
    tether__config_agreed(cfg, p->settings);
    p->heartbeat_ms = cfg->heartbeat_ms;
    p->out_links = calloc((size_t)size, sizeof *p->out_links);
    p->in_links = calloc((size_t)size, sizeof *p->in_links);
    p->naddrs = calloc((size_t)size, sizeof *p->naddrs);
    p->addrs = calloc((size_t)size, sizeof *p->addrs);
    if (!p->out_links || !p->in_links || !p->naddrs || !p->addrs) {
        tether__net_plan_free(p);
        return tether__fail(TETHER_ENOMEM, "out of memory planning the links of %d ranks", size);
    }
    return TETHER_OK;
}

int tether__net_plan_add_addr(tether__net_plan *p, int peer, const tether__hostaddr *a)
{
    tether__hostaddr *grown =
        realloc(p->addrs[peer], (size_t)(p->naddrs[peer] + 1) * sizeof *grown);
    if (!grown)
        return tether__fail(TETHER_ENOMEM, "out of memory for the addresses of rank %d", peer);
    grown[p->naddrs[peer]++] = *a;
    p->addrs[peer] = grown;
    return TETHER_OK;
}

void tether__net_plan_free(tether__net_plan *p)
{
    for (int peer = 0; p->addrs && peer < p->size; peer++)
        free(p->addrs[peer]);
    free(p->addrs);
    free(p->naddrs);
    free(p->in_links);
    free(p->out_links);
    memset(p, 0, sizeof *p);
}

void tether__net_links_free(tether__net_links *l)
{
    for (int peer = 0; l->fds && peer < l->size; peer++) {
        for (int k = 0; l->fds[peer] && k < l->nlinks[peer]; k++)
            if (l->fds[peer][k] >= 0)
                close(l->fds[peer][k]);
        free(l->fds[peer]);
        if (l->dialed)
            free(l->dialed[peer]);
    }
    free(l->fds);
    free(l->dialed);
    free(l->nlinks);
    free(l->addr);
    free(l->announced);
    memset(l, 0, sizeof *l);
}
