/* tests/transport/harness.h - real ranks for transport tests: forked processes, loopback ports,
 * a per-rank hostfile, and waiting on requests through the backend's vtable. */
#ifndef TETHER_TEST_HARNESS_H
#define TETHER_TEST_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backends/mesh/mesh.h"
#include "core/transport.h"

/* Fail the running process (a rank or the parent) with the location and a message. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* A call that must succeed; prints tether_last_error() otherwise. */
#define CHECK_OK(expr) CHECK((expr) == TETHER_OK, "%s: %s", #expr, tether_last_error())

#define MAX_RANKS 8

typedef struct rank_ctx {
    int rank, size;
    int ports[2 * MAX_RANKS];
    const char *hostfile;
} rank_ctx;

/* n free loopback ports (bound once and released, so a later bind may still race; tests use
 * them at once). */
void harness_ports(int n, int *ports);

/* A per-rank hostfile in a temp dir: rank r listens on 127.0.0.1:ports[r], and with naddrs 2
 * also on 127.0.0.2:ports[n + r] (a second "cable"). Returns its path. */
const char *harness_hostfile(int n, int naddrs, const int *ports);

/* Fork one process per rank running body(ctx); each exits 0 when body returns 0. extra_env
 * (NULL-terminated "K=V" list, may be NULL) is set in every rank before body. Returns 0 when
 * every rank exited 0, else 1 after printing which did not. Ranks are killed after 60 s. */
int harness_run(int n, const char *const *extra_env, int (*body)(const rank_ctx *ctx));

/* The same with naddrs (1 or 2) addresses per rank in the hostfile. */
int harness_run_addrs(int n, int naddrs, const char *const *extra_env,
                      int (*body)(const rank_ctx *ctx));

/* Fork one rank without waiting: its pid. harness_reap collects it (0 if it exited 0). */
int harness_spawn(const rank_ctx *ctx, int (*body)(const rank_ctx *ctx));
int harness_reap(int pid, int rank);

/* Open the mesh from the environment (TETHER_RANK, TETHER_HOSTFILE... as tether_init reads it);
 * fails the rank unless it forms with ctx's rank and size. */
tether__ep *harness_open(const rank_ctx *ctx);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t harness_now_ms(void);

/* Wait for r on ep, at most 20 s: TETHER_OK or the failure. */
int harness_wait(tether__ep *ep, tether__req *r);

/* Send or receive one message and wait for it. */
int harness_send(tether__ep *ep, int peer, const void *buf, size_t len, tether__tag tag);
int harness_recv(tether__ep *ep, int peer, void *buf, size_t len, tether__tag tag);

/* A loopback connection to port, retried for 5 s while nothing listens there yet. */
int harness_connect(int port);

/* Join the rank listening on port as rank `rank` (0: the lower of a pair) of size (token: the
 * job's): connect, pass the hello, then send the first `frames` of opening's frames: the empty
 * cross-memory offer and the answer to the rank's own (backends/tcp/cma.h), an empty shared-ring
 * offer (backends/tcp/engine_shm.c) and the word that not all pairs have rings. With all
 * HARNESS_OPENING_FRAMES the rank's endpoint forms and reads whatever comes next as frames.
 * Returns the socket. */
#define HARNESS_OPENING_FRAMES 4
int harness_fake_peer(int port, int rank, int size, const char *token, int frames);

/* Send a frame header (backends/net/frame.h) on fd; write len bytes of payload (fails the process
 * when the socket fails). */
void harness_send_frame(int fd, uint32_t type, tether__tag tag, uint64_t len, int32_t code);
void harness_write_all(int fd, const void *buf, size_t len);

/* Fill / check a buffer with a pattern that depends on (seed, offset). */
void harness_fill(unsigned char *buf, size_t len, uint32_t seed);
int harness_verify(const unsigned char *buf, size_t len, uint32_t seed);

#endif
