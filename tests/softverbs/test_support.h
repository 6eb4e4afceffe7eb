/* test_support.h - helpers for the emulator's tests: scenarios in child processes, QP set-up,
 * waits.
 *
 * The emulator reads SOFTVERBS_* once per process and keeps process-wide state, so each scenario
 * runs in a fresh child with its own environment and socket directory; it fails with CHECK, which
 * prints the line and exits, and the cmocka test in the parent asserts the child's exit status.
 */
#ifndef SOFTVERBS_TEST_SUPPORT_H
#define SOFTVERBS_TEST_SUPPORT_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s (errno: %s)\n", __FILE__, __LINE__, #cond,    \
                    strerror(errno));                                                              \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

/* Run scenario in a child whose environment also has env ("NAME=value", NULL-terminated) and a
 * fresh SOFTVERBS_DIR; returns its exit status, or -1 if it died or outlived 60 s (then killed). */
int sv_run(const char *const *env, int (*scenario)(void));

/* One end: device, PD, CQ (with a channel), QP and one registered buffer. */
typedef struct sv_ep {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    unsigned char *buf;
    size_t len;
    int gid_index; /* where the device's IPv4-mapped GID is */
    union ibv_gid gid;
    int rnr_retry; /* RC: for RTS (7 = forever) */
} sv_ep;

/* Open device dev with a QP of type (send/recv queues of 16, CQ of cqe) and an MR of len bytes
 * (page aligned) with access. */
void sv_ep_open(sv_ep *e, int dev, enum ibv_qp_type type, int cqe, size_t len, int access);
/* INIT -> RTR -> RTS towards the QP qpn whose GID is dgid, with the masks the spec requires. */
int sv_ep_connect(sv_ep *e, uint32_t qpn, const union ibv_gid *dgid);
void sv_ep_close(sv_ep *e);
/* Two ends on devices 0 and 1 of this process, connected to each other. */
void sv_pair(sv_ep *a, sv_ep *b, enum ibv_qp_type type, int cqe, size_t len);

int sv_send(sv_ep *e, enum ibv_wr_opcode op, uint64_t id, size_t off, size_t len, unsigned flags,
            uint64_t raddr, uint32_t rkey);
int sv_recv(sv_ep *e, uint64_t id, size_t off, size_t len);
/* One completion within timeout_ms: 1, 0 on timeout, -1 if ibv_poll_cq failed. Sleeps between
 * polls. */
int sv_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms);

#endif
