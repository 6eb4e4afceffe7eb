/* backends/net/socket.c - socket helpers: listen, connect, options, timed I/O, routes. */
#include "socket.h"

#include "congestion.h"
#include "core/clock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/params.h"
#include "core/platform.h"

#if TETHER__LINUX
#include <linux/sockios.h> /* SIOCINQ, SIOCOUTQ */
#endif

/* Close-on-exec from socket() itself on Linux; macOS has no SOCK_CLOEXEC, and its sockets get
 * FD_CLOEXEC from set_nonblock (or are closed before any exec) instead. */
#if TETHER__LINUX
#define SOCK_CX SOCK_CLOEXEC
#else
#define SOCK_CX 0
#endif

/* Socket buffers we ask for: enough for a few milliseconds of a 40 Gb/s Thunderbolt link. */
#define WANT_SOCKBUF (8 << 20)

/* Keepalive: a machine that vanished (cable pulled, power lost) is noticed within ~25 s even when
 * no collective is running; a dead process is noticed at once through its FIN/RST. */
#define KEEPALIVE_IDLE_S 10
#define KEEPALIVE_INTVL_S 5
#define KEEPALIVE_COUNT 3

int64_t tether__net_now_ms(void)
{
    return tether__now_ms();
}

void tether__net_clock_text(char *buf, size_t len)
{
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    localtime_r(&tv.tv_sec, &tm);
    snprintf(buf, len, "%02d:%02d:%02d.%d", tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(tv.tv_usec / 100000));
}

int tether__net_resolve(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len)
{
    struct addrinfo hints, *res = NULL;
    char portstr[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(portstr, sizeof portstr, "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, &res);
    if (rc != 0 || !res)
        return tether__fail(TETHER_ENET,
                            "getaddrinfo(%s): %s; check the host name in the hostfile or "
                            "%s",
                            host, gai_strerror(rc), TETHER__VAR(COORDINATOR));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return TETHER_OK;
}

void tether__net_addr_text(const struct sockaddr *sa, char *out, size_t n)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
        snprintf(out, n, "%s:%d", ip, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
        snprintf(out, n, "[%s]:%d", ip, ntohs(in6->sin6_port));
    } else {
        snprintf(out, n, "(address family %d)", sa->sa_family);
    }
}

static int set_nonblock(int fd, const char *what)
{
    /* close-on-exec too: a rank that starts a program must not leak its links into it */
    int flags = fcntl(fd, F_GETFL, 0);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        return tether__fail(TETHER_ENET, "fcntl(O_NONBLOCK, FD_CLOEXEC) on the socket for %s: %s",
                            what, strerror(errno));
    return TETHER_OK;
}

static int set_opt(int fd, int level, int name, int value, const char *optname, const char *what)
{
    if (setsockopt(fd, level, name, &value, sizeof value) < 0)
        return tether__fail(TETHER_ENET, "setsockopt(%s) on the socket for %s: %s", optname, what,
                            strerror(errno));
    return TETHER_OK;
}

/* IPv4 loopback (127.0.0.0/8), also as an IPv4-mapped IPv6 address, or ::1. */
static int loopback(const struct sockaddr_storage *a)
{
    if (a->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    const struct in6_addr *v6 = &((const struct sockaddr_in6 *)a)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(v6) || (IN6_IS_ADDR_V4MAPPED(v6) && v6->s6_addr[12] == 127);
}

/* 1 if *ss is an address of this host: loopback, or one a socket can bind to. */
static int this_host(const struct sockaddr_storage *ss, socklen_t len)
{
    if (loopback(ss))
        return 1;
    struct sockaddr_storage a = *ss;
    if (a.ss_family == AF_INET)
        ((struct sockaddr_in *)&a)->sin_port = 0;
    else
        ((struct sockaddr_in6 *)&a)->sin6_port = 0;
    int fd = socket(a.ss_family, SOCK_DGRAM | SOCK_CX, 0);
    if (fd < 0)
        return 0;
    int bound = bind(fd, (struct sockaddr *)&a, len) == 0;
    close(fd);
    return bound;
}

int tether__net_listen(const char *host, int port, int *fd_out, int *bound_port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    char what[TETHER__ADDR_TEXT];
    int rc;
    snprintf(what, sizeof what, "%s:%d", host, port);
    TRY(tether__net_resolve(host, port, &ss, &len));
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CX, 0);
    if (fd < 0)
        return tether__fail(TETHER_ENET, "socket() to listen on %s: %s", what, strerror(errno));
    TRY_GOTO(rc, set_opt(fd, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR", what), fail);
    TRY_GOTO(rc, set_nonblock(fd, what), fail);
    char listening[sizeof what + 24];
    snprintf(listening, sizeof listening, "the listening socket %s", what);
    TRY_GOTO(rc, tether__net_congestion_open(fd, 1, listening), fail);
    if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
        int e = errno;
        if (e == EADDRINUSE)
            rc = tether__fail(
                TETHER_ENET,
                "bind(%s): address already in use: another program (or an "
                "earlier run still exiting) listens on port %d; pick other ports, e.g. "
                "tether launch --starting-port",
                what, port);
        else
            rc = tether__fail(TETHER_ENET, "bind(%s): %s%s", what, strerror(e),
                              e == EADDRNOTAVAIL
                                  ? "; the address is not on this machine: check this "
                                    "rank's entry in the hostfile"
                                  : "");
        goto fail;
    }
    if (listen(fd, 128) < 0) {
        rc = tether__fail(TETHER_ENET, "listen(%s): %s", what, strerror(errno));
        goto fail;
    }
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        rc = tether__fail(TETHER_ENET, "getsockname(%s): %s", what, strerror(errno));
        goto fail;
    }
    *bound_port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                : ((struct sockaddr_in6 *)&ss)->sin6_port);
    *fd_out = fd;
    return TETHER_OK;
fail:
    close(fd);
    return rc;
}

int tether__net_connect_start(const struct sockaddr_storage *ss, socklen_t len, const char *what,
                              int *fd_out)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CX, 0);
    if (fd < 0 && tether__net_out_of_fds(errno))
        return errno; /* the caller sheds a stray connection and retries */
    if (fd < 0)
        return tether__fail(TETHER_ENET, "socket() to connect to %s: %s", what, strerror(errno));
    int rc = set_nonblock(fd, what);
    if (rc == TETHER_OK)
        rc = tether__net_congestion_open(fd, this_host(ss, len), what);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    if (connect(fd, (const struct sockaddr *)ss, len) < 0 && errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        return e; /* refused, unreachable...: the caller retries with backoff */
    }
    *fd_out = fd;
    return 0;
}

int tether__net_accept(int lfd, int *fd_out, char *peer_text, size_t n)
{
    struct sockaddr_storage ss;
    for (;;) {
        socklen_t len = sizeof ss;
        int fd = accept(lfd, (struct sockaddr *)&ss, &len);
        if (fd < 0 && (errno == ECONNABORTED || errno == EINTR))
            continue; /* a client that gave up before we got to it */
        if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (fd < 0 && tether__net_out_of_fds(errno))
            return 2;
        if (fd < 0)
            return tether__fail(TETHER_ENET, "accept(): %s", strerror(errno));
        tether__net_addr_text((struct sockaddr *)&ss, peer_text, n);
        /* accepted sockets do not inherit O_NONBLOCK on Linux: a silent client would block us */
        int rc = set_nonblock(fd, peer_text);
        if (rc < 0) {
            close(fd);
            return rc;
        }
        *fd_out = fd;
        return 1;
    }
}

int tether__net_out_of_fds(int err)
{
    return err == EMFILE || err == ENFILE;
}

int tether__net_connect_result(int fd)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        return errno;
    return err;
}

#if TETHER__LINUX
/* Linux grows socket buffers by itself up to tcp_rmem/tcp_wmem (often 4-6 MiB); an explicit
 * SO_RCVBUF switches that off and is capped at rmem_max (often 208 KiB), which would shrink the
 * buffers. So ask only when the cap allows what we want. */
static int sockbuf_allowed(const char *proc_file)
{
    long max = 0;
    FILE *f = fopen(proc_file, "r");
    if (f) {
        if (fscanf(f, "%ld", &max) != 1)
            max = 0;
        fclose(f);
    }
    return max >= WANT_SOCKBUF;
}
#else
static int sockbuf_allowed(const char *proc_file)
{
    (void)proc_file;
    return 1; /* macOS and BSDs start small (128 KiB) and benefit from asking */
}
#endif

long tether__net_local_sndbuf_default(void)
{
#if TETHER__LINUX && defined(_SC_LEVEL2_CACHE_SIZE)
    long half = sysconf(_SC_LEVEL2_CACHE_SIZE) / 2;
    if (half <= 0)
        half = 512L << 10; /* the L2 unknown: half of a common 1 MiB */
    return half > TETHER__NET_LOCAL_SNDBUF_MIN ? half : TETHER__NET_LOCAL_SNDBUF_MIN;
#else
    return 0; /* measured on Linux only; elsewhere the system's (or WANT_SOCKBUF) stays */
#endif
}

/* Open fd's receive window to bytes from the start, keeping the kernel's autotuning (Linux). The
 * buffer starts at tcp_rmem[1] (often 128 KiB) and grows only as reads show the need; between
 * processes of one host, whose bursts outrun that, windows closed and reopened mid-message (zero
 * window advertisements in nstat) and one-host collectives slowed down. SO_RCVBUF would size it
 * too but switch autotuning off, which cost more at larger messages; raising SO_RCVLOWAT grows the
 * buffer to hold such a window and leaves autotuning on, so set it to bytes and back to 1 (reads
 * return as soon as anything arrived). (measured: docs/perf/notes.md, backends/net/socket.c) */
static int open_rcvwin(int fd, long bytes, const char *what)
{
#if TETHER__LINUX && defined(SO_RCVLOWAT)
    TRY(set_opt(fd, SOL_SOCKET, SO_RCVLOWAT, (int)bytes, "SO_RCVLOWAT", what));
    return set_opt(fd, SOL_SOCKET, SO_RCVLOWAT, 1, "SO_RCVLOWAT", what);
#else
    (void)fd, (void)bytes, (void)what;
    return TETHER_OK;
#endif
}

static int get_opt(int fd, int name)
{
    int v = 0;
    socklen_t len = sizeof v;
    return getsockopt(fd, SOL_SOCKET, name, &v, &len) == 0 ? v : 0;
}

int tether__net_set_local_bufs(int fd, long bytes, const char *what)
{
    long asked = bytes;
#if TETHER__LINUX
    asked /= 2; /* Linux doubles what it is given (half is its bookkeeping) */
#endif
    TRY(set_opt(fd, SOL_SOCKET, SO_SNDBUF, (int)asked, "SO_SNDBUF", what));
    TRY(open_rcvwin(fd, bytes, what));
    TLOG_INFO("%s: send buffer %d bytes, receive buffer %d bytes (both ends on this host)", what,
              get_opt(fd, SO_SNDBUF), get_opt(fd, SO_RCVBUF));
    return TETHER_OK;
}

static int set_keepalive(int fd, const char *what)
{
    TRY(set_opt(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE", what));
#if defined(TCP_KEEPIDLE)
    TRY(set_opt(fd, IPPROTO_TCP, TCP_KEEPIDLE, KEEPALIVE_IDLE_S, "TCP_KEEPIDLE", what));
#elif defined(TCP_KEEPALIVE) /* macOS spells the idle time this way */
    TRY(set_opt(fd, IPPROTO_TCP, TCP_KEEPALIVE, KEEPALIVE_IDLE_S, "TCP_KEEPALIVE", what));
#endif
#if defined(TCP_KEEPINTVL) && defined(TCP_KEEPCNT)
    TRY(set_opt(fd, IPPROTO_TCP, TCP_KEEPINTVL, KEEPALIVE_INTVL_S, "TCP_KEEPINTVL", what));
    TRY(set_opt(fd, IPPROTO_TCP, TCP_KEEPCNT, KEEPALIVE_COUNT, "TCP_KEEPCNT", what));
#endif
    return TETHER_OK;
}

int tether__net_tune(int fd, const char *what)
{
    TRY(set_nonblock(fd, what));
    TRY(set_opt(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY", what));
    if (sockbuf_allowed("/proc/sys/net/core/wmem_max"))
        TRY(set_opt(fd, SOL_SOCKET, SO_SNDBUF, WANT_SOCKBUF, "SO_SNDBUF", what));
    if (sockbuf_allowed("/proc/sys/net/core/rmem_max"))
        TRY(set_opt(fd, SOL_SOCKET, SO_RCVBUF, WANT_SOCKBUF, "SO_RCVBUF", what));
#if TETHER__LINUX && defined(TCP_QUICKACK)
    TRY(set_opt(fd, IPPROTO_TCP, TCP_QUICKACK, 1, "TCP_QUICKACK", what));
#endif
#ifdef SO_NOSIGPIPE /* macOS has no MSG_NOSIGNAL: a write to a closed peer must not kill us */
    TRY(set_opt(fd, SOL_SOCKET, SO_NOSIGPIPE, 1, "SO_NOSIGPIPE", what));
#endif
    tether__net_congestion_linked(fd, tether__net_same_host(fd), what);
    return set_keepalive(fd, what);
}

/* Wait until fd is ready for events or the deadline passes. */
static int wait_fd(int fd, short events, int64_t deadline_ms, const char *op, const char *what)
{
    for (;;) {
        int64_t left = deadline_ms - tether__net_now_ms();
        if (left <= 0)
            return tether__fail(TETHER_ETIMEDOUT, "timed out %s %s", op, what);
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return TETHER_OK;
        if (n < 0 && errno != EINTR)
            return tether__fail(TETHER_ENET, "poll() %s %s: %s", op, what, strerror(errno));
    }
}

int tether__net_write_all(int fd, const void *buf, size_t len, int64_t deadline_ms,
                          const char *what)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, TETHER__SEND_FLAGS);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            TRY(wait_fd(fd, POLLOUT, deadline_ms, "sending to", what));
        } else if (n < 0 && errno != EINTR) {
            return tether__fail(TETHER_ENET, "send() to %s: %s", what, strerror(errno));
        }
    }
    return TETHER_OK;
}

int tether__net_read_all(int fd, void *buf, size_t len, int64_t deadline_ms, const char *what)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n == 0) {
            return tether__fail(TETHER_EPEER,
                                "%s closed the connection during set-up; it probably "
                                "exited, see its output",
                                what);
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            TRY(wait_fd(fd, POLLIN, deadline_ms, "receiving from", what));
        } else if (errno != EINTR) {
            return tether__fail(TETHER_ENET, "recv() from %s: %s", what, strerror(errno));
        }
    }
    return TETHER_OK;
}

int tether__net_route_addr(const char *host, int port, char *out, size_t n)
{
    struct sockaddr_storage ss, local;
    socklen_t len, llen = sizeof local;
    char what[TETHER__ADDR_TEXT];
    snprintf(what, sizeof what, "%s:%d", host, port);
    TRY(tether__net_resolve(host, port, &ss, &len));
    /* connect() on a UDP socket only looks up the route, and getsockname() then tells the source
     * address the kernel picked. */
    int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CX, 0);
    if (fd < 0)
        return tether__fail(TETHER_ENET, "socket() to find the route to %s: %s", what,
                            strerror(errno));
    int rc = TETHER_OK;
    if (connect(fd, (struct sockaddr *)&ss, len) < 0)
        rc = tether__fail(TETHER_ENET, "no route to the coordinator %s: %s", what, strerror(errno));
    else if (getsockname(fd, (struct sockaddr *)&local, &llen) < 0)
        rc = tether__fail(TETHER_ENET, "getsockname() for the route to %s: %s", what,
                          strerror(errno));
    else if (!inet_ntop(local.ss_family,
                        local.ss_family == AF_INET
                            ? (void *)&((struct sockaddr_in *)&local)->sin_addr
                            : (void *)&((struct sockaddr_in6 *)&local)->sin6_addr,
                        out, (socklen_t)n))
        rc =
            tether__fail(TETHER_ENET, "inet_ntop() for the route to %s: %s", what, strerror(errno));
    close(fd);
    return rc;
}

int tether__net_same_subnet(const char *mine, const char *theirs)
{
    struct in_addr a, b;
    struct ifaddrs *ifs = NULL;
    int same = 0;
    if (inet_pton(AF_INET, mine, &a) != 1 || inet_pton(AF_INET, theirs, &b) != 1 ||
        getifaddrs(&ifs) < 0)
        return 0;
    for (struct ifaddrs *i = ifs; i && !same; i = i->ifa_next) {
        if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != AF_INET)
            continue;
        uint32_t ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        uint32_t mask = ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
        same = ip == a.s_addr && (a.s_addr & mask) == (b.s_addr & mask);
    }
    freeifaddrs(ifs);
    return same;
}

int tether__net_same_host(int fd)
{
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof me, pl = sizeof peer;
    if (getsockname(fd, (struct sockaddr *)&me, &ml) < 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 || me.ss_family != peer.ss_family ||
        (me.ss_family != AF_INET && me.ss_family != AF_INET6))
        return 0;
    if (loopback(&me) && loopback(&peer))
        return 1;
    if (me.ss_family == AF_INET)
        return ((struct sockaddr_in *)&me)->sin_addr.s_addr ==
               ((struct sockaddr_in *)&peer)->sin_addr.s_addr;
    return !memcmp(&((struct sockaddr_in6 *)&me)->sin6_addr,
                   &((struct sockaddr_in6 *)&peer)->sin6_addr, sizeof(struct in6_addr));
}

size_t tether__net_segment(int fd)
{
#if TETHER__LINUX
    /* the segment this end advertises, fixed by the route's MTU and alike at both ends of a link
     * of one host. Not TCP_MAXSEG: Linux bounds it by half the largest window seen so far, so it
     * differs between the two ends of a fresh loopback link (32741 and 32768) and grows as the
     * window opens (65483); macOS's is unmeasured here, so other systems say nothing. */
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && ti.tcpi_advmss > 0)
        return ti.tcpi_advmss;
#endif
    (void)fd;
    return 0;
}

void tether__net_queued(int fd, size_t *in, size_t *out)
{
    int i = 0, o = 0;
#if TETHER__LINUX
    if (ioctl(fd, SIOCINQ, &i) < 0)
        i = 0;
    if (ioctl(fd, SIOCOUTQ, &o) < 0)
        o = 0;
#else
    if (ioctl(fd, FIONREAD, &i) < 0)
        i = 0;
#if defined(SO_NWRITE) /* macOS: bytes not yet acknowledged; other systems say nothing */
    socklen_t len = sizeof o;
    if (getsockopt(fd, SOL_SOCKET, SO_NWRITE, &o, &len) < 0)
        o = 0;
#endif
#endif
    *in = i > 0 ? (size_t)i : 0;
    *out = o > 0 ? (size_t)o : 0;
}
