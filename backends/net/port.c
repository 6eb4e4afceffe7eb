/* backends/net/port.c - a free TCP port on this machine (port.h). */
#include "port.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/random.h"

#define PORT_MIN 10000 /* the draws: from here up to the outgoing range */
#define DRAWS 64

/* The first port of the kernel's range for outgoing connections (Linux: ip_local_port_range;
 * macOS and the BSDs start theirs at 49152). */
static int outgoing_low(void)
{
    int low = 49152;
#if defined(__linux__)
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%d", &low) != 1)
            low = 32768;
        fclose(f);
    }
#endif
    return low;
}

static void set_port(struct sockaddr_storage *ss, int port)
{
    if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
}

int tether__net_free_port(const struct sockaddr *addr, socklen_t len, int *held)
{
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof ss;
    int low = outgoing_low(), bound = 0, e;
    if (len > sizeof ss) {
        errno = EINVAL;
        return -1;
    }
    /* FD_CLOEXEC set apart (POSIX; macOS has no SOCK_CLOEXEC) */
    int fd = socket(addr->sa_family, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
        goto fail;
    for (int i = 0; i < DRAWS && !bound && low > PORT_MIN + 1; i++) {
        uint32_t r;
        if (tether__random_bytes(&r, sizeof r) < 0)
            break;
        memcpy(&ss, addr, len);
        set_port(&ss, PORT_MIN + (int)(r % (uint32_t)(low - PORT_MIN)));
        bound = bind(fd, (struct sockaddr *)&ss, len) == 0;
    }
    if (!bound) {
        memcpy(&ss, addr, len);
        set_port(&ss, 0);
        if (bind(fd, (struct sockaddr *)&ss, len) != 0)
            goto fail;
    }
    /* listened on, so that no other pick (with or without SO_REUSEADDR) gets the same port */
    if (listen(fd, 1) != 0 || getsockname(fd, (struct sockaddr *)&ss, &sslen) != 0)
        goto fail;
    *held = fd;
    return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                          : ((struct sockaddr_in *)&ss)->sin_port);
fail:
    e = errno;
    close(fd);
    errno = e;
    return -1;
}
