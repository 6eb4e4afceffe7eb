/* tests/support/free_port.c - a free loopback TCP port (free_port.h), drawn as the launcher draws
 * its local jobs' ports (backends/net/port.h). */
#include "free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "backends/net/port.h"

int tether__test_free_port(int *held)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    return tether__net_free_port((const struct sockaddr *)&a, sizeof a, held);
}
