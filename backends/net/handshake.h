/* backends/net/handshake.h - the hello every TCP connection starts with, and its checks.
 *
 * The connecting side sends a hello (magic, protocol version, job token, its rank, the world size,
 * the link index and how many links it opens to this peer, optionally an address it announces, its
 * backend and the settings every rank must share: tether__config_agreed);
 * the accepting side checks it and answers with its own hello whose status says yes or why not.
 * A connection whose first bytes are not a hello is a stray and is dropped without an answer. */
#ifndef TETHER_NET_HANDSHAKE_H
#define TETHER_NET_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"

#define TETHER__HELLO_SIZE 336
#define TETHER__HELLO_MAGIC 0x52485454u /* "TTHR" in memory order */
#define TETHER__PROTO_VERSION 3 /* 2: the cross-memory frames (cma.h); 3: backend and settings */
#define TETHER__ANNOUNCE_MAX 64
#define TETHER__BACKEND_MAX 16

typedef enum {
    TETHER__HS_OK = 0,
    TETHER__HS_BAD_VERSION = 1,
    TETHER__HS_BAD_TOKEN = 2,
    TETHER__HS_BAD_SIZE = 3,
    TETHER__HS_BAD_LINK = 4, /* a rank or link index this side does not expect, or a duplicate */
    TETHER__HS_BAD_SETTINGS = 5, /* another backend, or settings that must agree differ */
} tether__hs_status;

typedef struct tether__hello {
    uint32_t version;
    uint32_t status; /* tether__hs_status: 0 in a hello, the verdict in an answer */
    int32_t rank;
    int32_t size;
    int32_t link;          /* index among the links the connecting side opens to this peer */
    int32_t nlinks;        /* how many links the connecting side opens to this peer */
    int32_t announce_port; /* 0: nothing announced */
    char announce_host[TETHER__ANNOUNCE_MAX]; /* bootstrap: the sender's listen address */
    char token[TETHER_TOKEN_MAX];             /* TETHER_JOB_TOKEN, zero-padded */
    char backend[TETHER__BACKEND_MAX];        /* "mesh", "ring", "rdma"; "" in the bootstrap */
    char settings[TETHER_AGREED_MAX];         /* tether__config_agreed */
} tether__hello;

void tether__hello_encode(const tether__hello *h, unsigned char out[TETHER__HELLO_SIZE]);

/* 0, or -1 when the bytes are not a tether hello (wrong magic): a stray connection. */
int tether__hello_decode(const unsigned char in[TETHER__HELLO_SIZE], tether__hello *h);

/* Check a peer's hello against ours: job token, protocol version, world size, backend, settings
 * (why then names both values). The rank and link
 * are the caller's business (it knows which links it expects). why says what differs. */
tether__hs_status tether__hello_check(const tether__hello *got, const tether__hello *mine,
                                      char *why, size_t why_len);

/* Short text for a status, for the connecting side's messages. */
const char *tether__hs_status_text(uint32_t status);

#endif
