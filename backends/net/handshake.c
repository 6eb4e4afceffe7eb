/* backends/net/handshake.c - encoding and checking the hello that opens every TCP connection. */
#include "handshake.h"

#include <stdio.h>
#include <string.h>

#include "core/params.h"
#include "core/wire.h"
#include "hmac.h"

/* Offsets in the hello. */
enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 4,
    OFF_STATUS = 8,
    OFF_RANK = 12,
    OFF_SIZE = 16,
    OFF_LINK = 20,
    OFF_NLINKS = 24,
    OFF_PORT = 28,
    OFF_HOST = 32,
    OFF_NONCE = OFF_HOST + TETHER__ANNOUNCE_MAX,
    OFF_PROOF = OFF_NONCE + TETHER__NONCE_SIZE,
    OFF_RESERVED = OFF_PROOF + TETHER__PROOF_SIZE, /* zero: where version 3 had the token */
    OFF_BACKEND = OFF_RESERVED + 64,
    OFF_SETTINGS = OFF_BACKEND + TETHER__BACKEND_MAX,
};

_Static_assert(OFF_SETTINGS + TETHER__AGREED_MAX == TETHER__HELLO_SIZE, "hello layout");

void tether__hello_encode(const tether__hello *h, unsigned char out[TETHER__HELLO_SIZE])
{
    memset(out, 0, TETHER__HELLO_SIZE);
    tether__put_u32(out + OFF_MAGIC, TETHER__HELLO_MAGIC);
    tether__put_u32(out + OFF_VERSION, h->version);
    tether__put_u32(out + OFF_STATUS, h->status);
    tether__put_u32(out + OFF_RANK, (uint32_t)h->rank);
    tether__put_u32(out + OFF_SIZE, (uint32_t)h->size);
    tether__put_u32(out + OFF_LINK, (uint32_t)h->link);
    tether__put_u32(out + OFF_NLINKS, (uint32_t)h->nlinks);
    tether__put_u32(out + OFF_PORT, (uint32_t)h->announce_port);
    memcpy(out + OFF_HOST, h->announce_host, strnlen(h->announce_host, TETHER__ANNOUNCE_MAX - 1));
    memcpy(out + OFF_NONCE, h->nonce, TETHER__NONCE_SIZE);
    memcpy(out + OFF_PROOF, h->proof, TETHER__PROOF_SIZE);
    memcpy(out + OFF_BACKEND, h->backend, strnlen(h->backend, TETHER__BACKEND_MAX - 1));
    memcpy(out + OFF_SETTINGS, h->settings, strnlen(h->settings, TETHER__AGREED_MAX - 1));
}

int tether__hello_decode(const unsigned char in[TETHER__HELLO_SIZE], tether__hello *h)
{
    if (tether__get_u32(in + OFF_MAGIC) != TETHER__HELLO_MAGIC)
        return -1;
    memset(h, 0, sizeof *h);
    h->version = tether__get_u32(in + OFF_VERSION);
    h->status = tether__get_u32(in + OFF_STATUS);
    h->rank = (int32_t)tether__get_u32(in + OFF_RANK);
    h->size = (int32_t)tether__get_u32(in + OFF_SIZE);
    h->link = (int32_t)tether__get_u32(in + OFF_LINK);
    h->nlinks = (int32_t)tether__get_u32(in + OFF_NLINKS);
    h->announce_port = (int32_t)tether__get_u32(in + OFF_PORT);
    /* the last byte of each text field stays 0, so a hostile hello cannot unterminate them */
    memcpy(h->announce_host, in + OFF_HOST, TETHER__ANNOUNCE_MAX - 1);
    memcpy(h->nonce, in + OFF_NONCE, TETHER__NONCE_SIZE);
    memcpy(h->proof, in + OFF_PROOF, TETHER__PROOF_SIZE);
    memcpy(h->backend, in + OFF_BACKEND, TETHER__BACKEND_MAX - 1);
    memcpy(h->settings, in + OFF_SETTINGS, TETHER__AGREED_MAX - 1);
    return 0;
}

/* HMAC(token, label, step, msgs[0..step-1], msgs[step] with its proof zeroed). The label keeps
 * these MACs apart from any other use of the token; the step keeps one step's proof from passing
 * for another's. */
static void proof_of(const char *token, const unsigned char msgs[][TETHER__HELLO_SIZE], int step,
                     unsigned char out[TETHER__PROOF_SIZE])
{
    static const char label[] = "tether handshake proof v4";
    unsigned char last[TETHER__HELLO_SIZE], s = (unsigned char)step;
    tether__hmac m;
    tether__hmac_init(&m, token, strlen(token));
    tether__hmac_update(&m, label, sizeof label);
    tether__hmac_update(&m, &s, 1);
    for (int i = 0; i < step; i++)
        tether__hmac_update(&m, msgs[i], TETHER__HELLO_SIZE);
    memcpy(last, msgs[step], sizeof last);
    memset(last + OFF_PROOF, 0, TETHER__PROOF_SIZE);
    tether__hmac_update(&m, last, sizeof last);
    tether__hmac_final(&m, out);
}

void tether__hs_prove(const char *token, unsigned char msgs[][TETHER__HELLO_SIZE], int step)
{
    proof_of(token, (const unsigned char(*)[TETHER__HELLO_SIZE])msgs, step, msgs[step] + OFF_PROOF);
}

int tether__hs_verify(const char *token, const unsigned char msgs[][TETHER__HELLO_SIZE], int step)
{
    unsigned char want[TETHER__PROOF_SIZE];
    proof_of(token, msgs, step, want);
    return tether__equal_ct(want, msgs[step] + OFF_PROOF, sizeof want);
}

void tether__hs_status_msg(uint32_t status, unsigned char out[TETHER__HELLO_SIZE])
{
    tether__hello h;
    memset(&h, 0, sizeof h);
    h.version = TETHER__PROTO_VERSION;
    h.status = status;
    tether__hello_encode(&h, out);
}

tether__hs_status tether__hello_check(const tether__hello *got, const tether__hello *mine,
                                      char *why, size_t why_len)
{
    if (got->version != mine->version) {
        snprintf(why, why_len,
                 "protocol version %u, this rank speaks %u: run the same tether version "
                 "on every machine",
                 got->version, mine->version);
        return TETHER__HS_BAD_VERSION;
    }
    if (got->size != mine->size) {
        snprintf(why, why_len,
                 "world size %d, this rank has %d: do all ranks use the same hostfile "
                 "and %s?",
                 got->size, mine->size, TETHER__VAR(SIZE));
        return TETHER__HS_BAD_SIZE;
    }
    if (strcmp(got->backend, mine->backend)) {
        snprintf(why, why_len,
                 "backend \"%s\", this rank \"%s\": every rank must run the same backend "
                 "(%s, the backend passed to tether_init)",
                 got->backend, mine->backend, TETHER__VAR(BACKEND));
        return TETHER__HS_BAD_SETTINGS;
    }
    if (strcmp(got->settings, mine->settings)) {
        snprintf(why, why_len, "settings \"%s\", this rank \"%s\": every rank must use the same",
                 got->settings, mine->settings);
        return TETHER__HS_BAD_SETTINGS;
    }
    return TETHER__HS_OK;
}

const char *tether__hs_status_text(uint32_t status)
{
    switch (status) {
    case TETHER__HS_OK:
        return "accepted";
    case TETHER__HS_BAD_VERSION:
        return "another tether protocol version";
    case TETHER__HS_BAD_TOKEN:
        return "wrong job token";
    case TETHER__HS_BAD_SIZE:
        return "another world size";
    case TETHER__HS_BAD_LINK:
        return "a rank or link it does not expect from us";
    case TETHER__HS_BAD_SETTINGS:
        return "another backend or settings";
    }
    return "an unknown status";
}
