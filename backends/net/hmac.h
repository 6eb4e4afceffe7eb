/* backends/net/hmac.h - SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), for the handshake's
 * proof that both sides of a connection know the job token without sending it (handshake.h).
 *
 * Our own small implementation, checked against the NIST and RFC 4231 vectors
 * (tests/unit/test_hmac.c): the library takes no crypto dependency for one MAC per connection. */
#ifndef TETHER_NET_HMAC_H
#define TETHER_NET_HMAC_H

#include <stddef.h>
#include <stdint.h>

#define TETHER__SHA256_SIZE 32
#define TETHER__SHA256_BLOCK 64

typedef struct tether__sha256 {
    uint32_t h[8];
    uint64_t len; /* bytes hashed so far */
    unsigned char block[TETHER__SHA256_BLOCK];
    size_t used; /* bytes of block filled */
} tether__sha256;

void tether__sha256_init(tether__sha256 *s);
void tether__sha256_update(tether__sha256 *s, const void *data, size_t n);
void tether__sha256_final(tether__sha256 *s, unsigned char out[TETHER__SHA256_SIZE]);

/* HMAC-SHA256, fed in pieces: init with the key, update with each piece, final. */
typedef struct tether__hmac {
    tether__sha256 inner, outer;
} tether__hmac;

void tether__hmac_init(tether__hmac *m, const void *key, size_t keylen);
void tether__hmac_update(tether__hmac *m, const void *data, size_t n);
void tether__hmac_final(tether__hmac *m, unsigned char out[TETHER__SHA256_SIZE]);

/* 1 when the n bytes of a and b are equal, in time that does not depend on where they differ. */
int tether__equal_ct(const void *a, const void *b, size_t n);

#endif
