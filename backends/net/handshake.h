/* backends/net/handshake.h - the four messages every TCP connection starts with, and their checks.
 *
 * Every message has the hello's layout (TETHER__HELLO_SIZE bytes):
 *   0 hello      connector -> acceptor: magic, protocol version, its rank, the world size, the link
 *                index and how many links it opens to this peer, optionally an address it
 *                announces, its backend, the settings every rank must share
 *                (tether__config_agreed), and a fresh random nonce;
 *   1 challenge  acceptor -> connector: the same fields of the acceptor, its own nonce, its proof;
 *   2 proof      connector -> acceptor: its verdict on the challenge (status), its proof;
 *   3 verdict    acceptor -> connector: its verdict on the hello, once the proof checked out.
 * A proof is an HMAC-SHA256 keyed with the job token over every message so far, its own with the
 * proof zeroed: each side shows it knows the token without sending it, so neither a refusal, a
 * replay (the other side's nonce is fresh) nor a sniffer on the link learns anything reusable.
 * The acceptor judges nothing fatal before the connector proved it knows the token: until then
 * a disagreement is a stray's, dropped with a warning. The connector chose the address from its
 * configuration, so an acceptor there that refuses it or cannot prove the token is an error that
 * names the address. A refusal carries only the version and the status.
 * A connection whose first bytes are not a hello is a stray and is dropped without an answer. */
#ifndef TETHER_NET_HANDSHAKE_H
#define TETHER_NET_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"

#define TETHER__HELLO_SIZE 336 /* as in version 3, so each side of a mixed pair reads a refusal */
#define TETHER__HELLO_MAGIC 0x52485454u /* "TTHR" in memory order */
/* 2: the cross-memory frames (cma.h); 3: backend and settings; 4: token proved, never sent */
#define TETHER__PROTO_VERSION 4
#define TETHER__NONCE_SIZE 32
#define TETHER__PROOF_SIZE 32 /* TETHER__SHA256_SIZE */
#define TETHER__HS_STEPS 4
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

/* The steps of the handshake, as numbered above. */
enum { TETHER__HS_HELLO, TETHER__HS_CHALLENGE, TETHER__HS_PROOF, TETHER__HS_VERDICT };

typedef struct tether__hello {
    uint32_t version;
    uint32_t status; /* tether__hs_status: 0 in a hello, a verdict in the other steps */
    int32_t rank;
    int32_t size;
    int32_t link;          /* index among the links the connecting side opens to this peer */
    int32_t nlinks;        /* how many links the connecting side opens to this peer */
    int32_t announce_port; /* 0: nothing announced */
    char announce_host[TETHER__ANNOUNCE_MAX]; /* bootstrap: the sender's listen address */
    unsigned char nonce[TETHER__NONCE_SIZE];  /* hello and challenge: fresh random bytes */
    unsigned char proof[TETHER__PROOF_SIZE];  /* challenge and proof: see above */
    char backend[TETHER__BACKEND_MAX];        /* "mesh", "ring", "rdma"; "" in the bootstrap */
    char settings[TETHER__AGREED_MAX];        /* tether__config_agreed */
} tether__hello;

void tether__hello_encode(const tether__hello *h, unsigned char out[TETHER__HELLO_SIZE]);

/* 0, or -1 when the bytes are not a tether hello (wrong magic): a stray connection. */
int tether__hello_decode(const unsigned char in[TETHER__HELLO_SIZE], tether__hello *h);

/* The messages of one connection's handshake, in their wire form, indexed by step. */
typedef unsigned char tether__hs_msgs[TETHER__HS_STEPS][TETHER__HELLO_SIZE];

/* Write the proof of msgs[step] (encoded, proof field ignored) keyed with token. */
void tether__hs_prove(const char *token, unsigned char msgs[][TETHER__HELLO_SIZE], int step);

/* 1 when msgs[step] carries the right proof for token, in constant time; else 0. */
int tether__hs_verify(const char *token, const unsigned char msgs[][TETHER__HELLO_SIZE], int step);

/* Encode a message of the protocol version and a status alone, nothing secret: a refusal, a
 * verdict, or a proof before tether__hs_prove. */
void tether__hs_status_msg(uint32_t status, unsigned char out[TETHER__HELLO_SIZE]);

/* Check a peer's hello or challenge against ours: protocol version, world size, backend, settings
 * (why then names both values). The token is the proof's business; the rank and link are the
 * caller's (it knows which links it expects). why says what differs. */
tether__hs_status tether__hello_check(const tether__hello *got, const tether__hello *mine,
                                      char *why, size_t why_len);

/* Short text for a status, for the connecting side's messages. */
const char *tether__hs_status_text(uint32_t status);

#endif
