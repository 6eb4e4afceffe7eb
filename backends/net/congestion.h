/* backends/net/congestion.h - the TCP congestion control of tether's connections (Linux). */
#ifndef TETHER_NET_CONGESTION_H
#define TETHER_NET_CONGESTION_H

/* Before connect() or listen() on fd: TETHER_TCP_CONGESTION if set, else Reno where one_host (a
 * peer of this host, or a listener, whose connections inherit it), else nothing. ECONFIG naming
 * the variable for an algorithm the kernel lacks or refuses; what names the socket. */
int tether__net_congestion_open(int fd, int one_host, const char *what);

/* After a connection formed (one_host: both ends on this host): one accepted from another host
 * goes back to the system's default, unless TETHER_TCP_CONGESTION chose for every connection. */
void tether__net_congestion_linked(int fd, int one_host, const char *what);

#endif
