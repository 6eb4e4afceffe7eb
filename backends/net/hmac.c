/* backends/net/hmac.c - SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104). */
#include "hmac.h"

#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
        uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
        uint32_t t1 = v[7] + S1 + ch + K[i] + w[i];
        uint32_t S0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
        uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
        memmove(v + 1, v, 7 * sizeof *v);
        v[4] += t1;
        v[0] = t1 + S0 + maj;
    }
    for (int i = 0; i < 8; i++)
        h[i] += v[i];
}

void tether__sha256_init(tether__sha256 *s)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->len = 0;
    s->used = 0;
}

void tether__sha256_update(tether__sha256 *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    s->len += n;
    while (n > 0) {
        size_t take = TETHER__SHA256_BLOCK - s->used < n ? TETHER__SHA256_BLOCK - s->used : n;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used == TETHER__SHA256_BLOCK) {
            compress(s->h, s->block);
            s->used = 0;
        }
    }
}

void tether__sha256_final(tether__sha256 *s, unsigned char out[TETHER__SHA256_SIZE])
{
    uint64_t bits = s->len * 8;
    unsigned char pad[TETHER__SHA256_BLOCK + 8] = {0x80};
    /* 0x80, zeros up to 56 mod 64, then the length in bits, big-endian */
    size_t padlen = (s->used < 56 ? 56 : 120) - s->used;
    for (int i = 0; i < 8; i++)
        pad[padlen + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
    tether__sha256_update(s, pad, padlen + 8);
    for (int i = 0; i < 8; i++)
        for (int b = 0; b < 4; b++)
            out[4 * i + b] = (unsigned char)(s->h[i] >> (24 - 8 * b));
}

void tether__hmac_init(tether__hmac *m, const void *key, size_t keylen)
{
    unsigned char k[TETHER__SHA256_BLOCK] = {0}, pad[TETHER__SHA256_BLOCK];
    if (keylen > sizeof k) { /* a long key is hashed first (RFC 2104) */
        tether__sha256 s;
        tether__sha256_init(&s);
        tether__sha256_update(&s, key, keylen);
        tether__sha256_final(&s, k);
    } else if (keylen > 0) {
        memcpy(k, key, keylen);
    }
    for (size_t i = 0; i < sizeof pad; i++)
        pad[i] = k[i] ^ 0x36;
    tether__sha256_init(&m->inner);
    tether__sha256_update(&m->inner, pad, sizeof pad);
    for (size_t i = 0; i < sizeof pad; i++)
        pad[i] = k[i] ^ 0x5c;
    tether__sha256_init(&m->outer);
    tether__sha256_update(&m->outer, pad, sizeof pad);
}

void tether__hmac_update(tether__hmac *m, const void *data, size_t n)
{
    tether__sha256_update(&m->inner, data, n);
}

void tether__hmac_final(tether__hmac *m, unsigned char out[TETHER__SHA256_SIZE])
{
    unsigned char inner[TETHER__SHA256_SIZE];
    tether__sha256_final(&m->inner, inner);
    tether__sha256_update(&m->outer, inner, sizeof inner);
    tether__sha256_final(&m->outer, out);
}

int tether__equal_ct(const void *a, const void *b, size_t n)
{
    const volatile unsigned char *x = a, *y = b;
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(x[i] ^ y[i]);
    return diff == 0;
}
