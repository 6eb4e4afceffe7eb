/* tests/support/handshake_client.h - the connecting side of the handshake (backends/net/
 * handshake.h), blocking, for tests and fuzz harnesses that act as a rank or as a stray. */
#ifndef TETHER_TESTS_HANDSHAKE_CLIENT_H
#define TETHER_TESTS_HANDSHAKE_CLIENT_H

#include <stddef.h>
#include <string.h>

#include "backends/net/handshake.h"

typedef struct tether__test_hs {
    int rank, size;       /* what the hello claims */
    const char *backend;  /* "mesh" when NULL */
    const char *token;    /* the key of our proof */
    int got_challenge;    /* out: a challenge (status OK) arrived */
    int challenge_proved; /* out: its proof is right for token */
    unsigned char seen[TETHER__HS_STEPS * TETHER__HELLO_SIZE]; /* out: every byte received */
    size_t nseen;
} tether__test_hs;

/* Run the handshake over the connected socket fd as rank hs->rank of hs->size, link 0 of 1, with
 * this process's agreed settings (TETHER_* read now). Each read waits at most 5 s. Returns the
 * status the acceptor ended with (TETHER__HS_OK: accepted), or -1 when it closed the connection,
 * went silent or sent something else. */
int tether__test_handshake(int fd, tether__test_hs *hs);

/* 1 when the bytes hay[0..n) hold the string needle: memmem, which POSIX lacks (the portable
 * build and macOS compile without _GNU_SOURCE). */
static inline int tether__test_holds(const unsigned char *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; k > 0 && i + k <= n; i++)
        if (!memcmp(hay + i, needle, k))
            return 1;
    return 0;
}

#endif
