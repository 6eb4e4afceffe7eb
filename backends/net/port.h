/* backends/net/port.h - a free TCP port on this machine, for a rank to listen on moments later
 * (the launcher's local jobs, the tests' hostfiles). */
#ifndef TETHER_NET_PORT_H
#define TETHER_NET_PORT_H

#include <sys/socket.h>

/* A port free at addr (an address of this machine; its port is ignored), or -1 with errno set.
 * It is drawn at random below the kernel's range for outgoing connections: a port from that range
 * (bind to port 0) can be taken by any connection made before the rank binds it ("address already
 * in use", seen in CI); port 0 where 64 draws find none free. The port stays listened on by *held,
 * which the caller closes once it has every port it needs (so all differ) and before the ranks
 * listen. */
int tether__net_free_port(const struct sockaddr *addr, socklen_t len, int *held);

#endif
