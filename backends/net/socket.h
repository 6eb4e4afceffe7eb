/* backends/net/socket.h - socket helpers every backend shares: listen, connect, tune, timed I/O.
 * Every failure is recorded with tether__fail naming the syscall, the address and strerror. */
#ifndef TETHER_NET_SOCKET_H
#define TETHER_NET_SOCKET_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "core/config.h"
#include "hostfile/hostfile.h"

/* "host:port" for any host a hostfile may hold, "[v6]:port" too. */
#define TETHER__ADDR_TEXT (TETHER__HOST_MAX + 16)

/* Flags of every send: a peer that closed must give EPIPE, not a SIGPIPE that kills the rank.
 * macOS has no MSG_NOSIGNAL; tether__net_tune sets SO_NOSIGPIPE there instead. */
#ifdef MSG_NOSIGNAL
#define TETHER__SEND_FLAGS MSG_NOSIGNAL
#else
#define TETHER__SEND_FLAGS 0
#endif

/* Monotonic clock in milliseconds, for deadlines. */
int64_t tether__net_now_ms(void);

/* The wall-clock time of day as "HH:MM:SS.d", for the lines that say a link or cable left or came
 * back (the user matches them with the other hosts' logs). */
void tether__net_clock_text(char *buf, size_t len);

/* Resolve host:port (numeric or a name) into *ss. ENET naming the address when it does not resolve.
 */
int tether__net_resolve(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len);

/* "ip:port" text of a socket address. */
void tether__net_addr_text(const struct sockaddr *sa, char *out, size_t n);

/* A non-blocking listening socket on host:port (port 0: any free one) with SO_REUSEADDR and the
 * congestion control of one-host links (congestion.h). *bound_port gets the port in use. "Address
 * already in use" names the address and suggests
 * --starting-port. */
int tether__net_listen(const char *host, int port, int *fd, int *bound_port);

/* Start a non-blocking connect to *ss, with the congestion control for where *ss is (congestion.h).
 * Returns 0 and sets *fd when the connect is under way or done
 * (poll for POLLOUT, then tether__net_connect_result); a positive errno when this attempt failed
 * in a way worth retrying (refused, unreachable); a negative TETHER_E* when it cannot work. */
int tether__net_connect_start(const struct sockaddr_storage *ss, socklen_t len, const char *what,
                              int *fd);

/* Accept one connection on a non-blocking listener: 1 and a non-blocking *fd (its peer's address
 * in text), 0 when none is waiting, 2 when this process is out of file descriptors (EMFILE,
 * ENFILE: the caller sheds connections, a flood must not fail the rank), or ENET. */
int tether__net_accept(int lfd, int *fd, char *peer_text, size_t n);

/* 1 for the errno of a process or system out of file descriptors (EMFILE, ENFILE). */
int tether__net_out_of_fds(int err);

/* errno of a finished non-blocking connect (0: connected). */
int tether__net_connect_result(int fd);

/* Options of a data connection: non-blocking, TCP_NODELAY, buffers, quick ACKs, keepalive, no
 * SIGPIPE, the system's congestion control for one accepted from another host. what names the peer
 * in messages. */
int tether__net_tune(int fd, const char *what);

/* Blocking-with-deadline I/O on a non-blocking socket, for the few small set-up messages.
 * ETIMEDOUT at the deadline, EPEER on EOF, ENET on a socket error; what names the peer. */
int tether__net_write_all(int fd, const void *buf, size_t len, int64_t deadline_ms,
                          const char *what);
int tether__net_read_all(int fd, void *buf, size_t len, int64_t deadline_ms, const char *what);

/* The local IPv4/IPv6 address the kernel would use to reach host:port (no packet is sent). */
int tether__net_route_addr(const char *host, int port, char *out, size_t n);

/* 1 if theirs is in the subnet of a local interface whose address is mine (IPv4 only; host names
 * and unknown addresses give 0). */
int tether__net_same_subnet(const char *mine, const char *theirs);

/* Bytes the kernel holds for socket fd: received but not yet read (*in), written but not yet
 * acknowledged by the peer (*out). 0 where the system cannot tell. */
void tether__net_queued(int fd, size_t *in, size_t *out);

/* Send buffer for a link joining two processes of one host (TETHER_TCP_LOCAL_SNDBUF's default):
 * half the L2 cache on Linux, 0 (the system's) elsewhere. Over loopback the sender copies each byte
 * into the kernel and the receiver copies it out; with no more than this in flight the receiver
 * finds it still in cache. Below TETHER__NET_LOCAL_SNDBUF_MIN large transfers stall (measured:
 * docs/perf/notes.md, backends/net/socket.h). */
#define TETHER__NET_LOCAL_SNDBUF_MIN (128L << 10)
long tether__net_local_sndbuf_default(void);
/* Such a link's buffers: a send buffer of bytes (as getsockopt reports it), and a receive window
 * as large from the start, the kernel's autotuning kept (Linux). Logs both sizes. */
int tether__net_set_local_bufs(int fd, long bytes, const char *what);

/* 1 if connected socket fd joins two processes of one host: its two ends have the same address,
 * or both are loopback addresses. */
int tether__net_same_host(int fd);

/* The largest segment of connected socket fd (Linux: the one it advertises), or 0 when unknown. */
size_t tether__net_segment(int fd);

#endif
