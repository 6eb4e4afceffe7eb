/* tests/support/free_port.h - a free loopback TCP port for a test's hostfile. */
#ifndef TETHER_TESTS_FREE_PORT_H
#define TETHER_TESTS_FREE_PORT_H

/* A port on 127.0.0.1 that no socket uses, or -1 (errno set) when none could be had. The port
 * stays bound to *held, a socket the caller closes once it has chosen every port it needs (so
 * that ports chosen one after another all differ) and before the ranks listen on them. */
int tether__test_free_port(int *held);

#endif
