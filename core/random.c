/* core/random.c - bytes from the system's random source. */
#include "random.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int tether__random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r == 0)
            errno = EIO;
        if (r <= 0 && !(r < 0 && errno == EINTR)) {
            int err = errno;
            close(fd);
            errno = err;
            return -1;
        }
        if (r > 0) {
            p += r;
            n -= (size_t)r;
        }
    }
    close(fd);
    return 0;
}
