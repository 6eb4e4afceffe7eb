/* tests/support/free_port.c - a free loopback TCP port (free_port.h). */
#include "free_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

int tether_test_free_port(int *held)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    *held = fd;
    return ntohs(a.sin_port);
}
