/* core/random.h - bytes from the system's random source, for secrets and nonces. */
#ifndef TETHER_CORE_RANDOM_H
#define TETHER_CORE_RANDOM_H

#include <stddef.h>

/* Fill buf with n bytes from /dev/urandom (every POSIX system we run on has it): 0, or -1 with
 * errno set (EIO for an early end of file). */
int tether__random_bytes(void *buf, size_t n);

#endif
