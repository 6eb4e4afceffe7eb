/* backends/net/congestion.c - which TCP congestion control a connection runs (Linux; other
 * systems have no per-socket choice, and TETHER_TCP_CONGESTION is an error there).
 *
 * TETHER_TCP_CONGESTION, when set, names it for every connection: e.g. cubic where the default is
 * BBR, whose rate estimate a token-bucket shaper misleads (lab/netns). Unset, connections between
 * processes of one host run Reno and the others the system's default. Loopback loses nothing, so
 * there a congestion control only costs: BBR, a common default, models the path on every ACK and
 * paces the sender with timers. Reno does least, and any process may choose it (the kernel never
 * restricts it). One-host all-reduces took 1-4 % less time at most sizes than under BBR, and showed
 * none of its occasional slow launches (measured: docs/perf/notes.md, backends/net/congestion.c).
 *
 * The choice comes before the connection forms: a socket that started under BBR keeps pacing after
 * a switch, with a rate from Reno's window, and ran slower (docs/PERFORMANCE.md, 2026-11-23). A
 * connecting socket knows its peer; a listening one does not, so it takes the one-host choice,
 * which the connections it accepts inherit, and one from another host goes back to the system's
 * default as soon as it is accepted, before any collective's data. */
#include "congestion.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "core/config.h"
#include "core/errors.h"
#include "core/log.h"
#include "core/platform.h"

#define ONE_HOST_CONGESTION "reno"

#if TETHER__LINUX && defined(TCP_CONGESTION)
#define CONGESTION_PER_SOCKET 1
#else
#define CONGESTION_PER_SOCKET 0
#endif

int tether__net_congestion_open(int fd, int one_host, const char *what)
{
    const char *cc;
    tether__param_text(TETHER__P_TCP_CONGESTION, &cc); /* any text: the kernel judges it */
#if CONGESTION_PER_SOCKET
    if (!cc && one_host) {
        if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, ONE_HOST_CONGESTION,
                       (socklen_t)strlen(ONE_HOST_CONGESTION)) < 0)
            TLOG_INFO("%s: keeps the system's congestion control (%s: %s)", what,
                      ONE_HOST_CONGESTION, strerror(errno));
        return TETHER_OK;
    }
    if (!cc || setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) == 0)
        return TETHER_OK;
    int e = errno;
    return tether__fail(TETHER_ECONFIG, "%s=\"%s\" on %s: %s%s", TETHER__VAR(TCP_CONGESTION), cc,
                        what, strerror(e),
                        e == ENOENT  ? " (the kernel has no such algorithm: see "
                                       "/proc/sys/net/ipv4/tcp_available_congestion_control)"
                        : e == EPERM ? " (not in net.ipv4.tcp_allowed_congestion_control, and "
                                       "this process lacks CAP_NET_ADMIN)"
                                     : "");
#else
    (void)fd, (void)one_host;
    if (!cc)
        return TETHER_OK;
    return tether__fail(TETHER_ECONFIG,
                        "%s=\"%s\" on %s: this system has no per-socket "
                        "congestion control; unset it",
                        TETHER__VAR(TCP_CONGESTION), cc, what);
#endif
}

#if CONGESTION_PER_SOCKET
/* The system's default congestion control into name (empty when unreadable). */
static void system_default(char *name, size_t n)
{
    name[0] = '\0';
    FILE *f = fopen("/proc/sys/net/ipv4/tcp_congestion_control", "re");
    if (!f)
        return;
    if (!fgets(name, (int)n, f))
        name[0] = '\0';
    fclose(f);
    name[strcspn(name, " \n")] = '\0';
}
#endif

void tether__net_congestion_linked(int fd, int one_host, const char *what)
{
#if CONGESTION_PER_SOCKET
    char now[32] = "", want[32] = "";
    socklen_t len = sizeof now - 1;
    if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, now, &len) < 0)
        return;
    if (!one_host && !tether__param_from(TETHER__P_TCP_CONGESTION) &&
        !strcmp(now, ONE_HOST_CONGESTION)) /* accepted from another host: the system's */
        system_default(want, sizeof want);
    if (want[0] && strcmp(want, now) != 0) {
        if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, want, (socklen_t)strlen(want)) == 0)
            snprintf(now, sizeof now, "%s", want);
        else
            TLOG_INFO("%s: cannot take the system's congestion control %s: %s", what, want,
                      strerror(errno));
    }
    TLOG_INFO("%s: TCP congestion control %s", what, now);
#else
    (void)fd, (void)one_host, (void)what;
#endif
}
