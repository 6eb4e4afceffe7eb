/* test_support.c - helpers for the emulator's tests: scenarios in child processes, QP set-up,
 * waits. */
#include "test_support.h"

#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *ent;
    char path[512];
    while (d && (ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

int sv_run(const char *const *env, int (*scenario)(void))
{
    char dir[] = "/tmp/svtest-XXXXXX";
    int status = 0;
    pid_t pid;
    CHECK(mkdtemp(dir) != NULL);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0); /* its own group, so peers it forks go with it */
        setenv("SOFTVERBS_DIR", dir, 1);
        for (int i = 0; env && env[i]; i++)
            CHECK(putenv((char *)env[i]) == 0);
        _exit(scenario());
    }
    for (int waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited += 5) {
        if (waited >= 60000) {
            fprintf(stderr, "scenario still running after 60 s: killed\n");
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            remove_dir(dir);
            return -1;
        }
        sleep_ms(5);
    }
    kill(-pid, SIGKILL); /* a peer left behind by a failed check must not hold our output open */
    remove_dir(dir);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int find_mapped_gid(sv_ep *e)
{
    for (int i = 0; i < 8; i++) {
        union ibv_gid g;
        static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (ibv_query_gid(e->ctx, 1, i, &g) == 0 && !memcmp(g.raw, prefix, sizeof prefix)) {
            e->gid = g;
            return i;
        }
    }
    return -1;
}

void sv_ep_open(sv_ep *e, int dev, enum ibv_qp_type type, int cqe, size_t len, int access)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    struct ibv_qp_init_attr ia = {
        .qp_type = type,
        .sq_sig_all = 0,
        .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1}};
    memset(e, 0, sizeof *e);
    CHECK(list && n > dev);
    CHECK((e->ctx = ibv_open_device(list[dev])) != NULL);
    ibv_free_device_list(list);
    e->gid_index = find_mapped_gid(e);
    CHECK(e->gid_index >= 0);
    CHECK((e->pd = ibv_alloc_pd(e->ctx)) != NULL);
    CHECK((e->ch = ibv_create_comp_channel(e->ctx)) != NULL);
    CHECK((e->cq = ibv_create_cq(e->ctx, cqe, e, e->ch, 0)) != NULL);
    ia.send_cq = ia.recv_cq = e->cq;
    CHECK((e->qp = ibv_create_qp(e->pd, &ia)) != NULL);
    e->len = len;
    e->buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(e->buf != MAP_FAILED);
    CHECK((e->mr = ibv_reg_mr(e->pd, e->buf, len, access)) != NULL);
    e->rnr_retry = 7;
}

int sv_ep_connect(sv_ep *e, uint32_t qpn, const union ibv_gid *dgid)
{
    int rc_type = e->qp->qp_type == IBV_QPT_RC, rc;
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                            .port_num = 1,
                            .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE};
    rc = ibv_modify_qp(e->qp, &a,
                       IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (rc)
        return rc;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = qpn;
    a.rq_psn = 7;
    a.min_rnr_timer = 12; /* 0.64 ms */
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.dgid = *dgid;
    a.ah_attr.grh.sgid_index = (uint8_t)e->gid_index;
    a.ah_attr.grh.hop_limit = 1;
    rc =
        ibv_modify_qp(e->qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          (rc_type ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0));
    if (rc)
        return rc;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 7;
    a.timeout = 10; /* 4 ms */
    a.retry_cnt = 3;
    a.rnr_retry = (uint8_t)e->rnr_retry;
    return ibv_modify_qp(e->qp, &a,
                         IBV_QP_STATE | IBV_QP_SQ_PSN |
                             (rc_type ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                            IBV_QP_MAX_QP_RD_ATOMIC
                                      : 0));
}

void sv_ep_close(sv_ep *e)
{
    CHECK(ibv_destroy_qp(e->qp) == 0);
    CHECK(ibv_dereg_mr(e->mr) == 0);
    CHECK(ibv_destroy_cq(e->cq) == 0);
    CHECK(ibv_destroy_comp_channel(e->ch) == 0);
    CHECK(ibv_dealloc_pd(e->pd) == 0);
    CHECK(ibv_close_device(e->ctx) == 0);
    munmap(e->buf, e->len);
}

void sv_pair(sv_ep *a, sv_ep *b, enum ibv_qp_type type, int cqe, size_t len)
{
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    sv_ep_open(a, 0, type, cqe, len, access);
    sv_ep_open(b, 1, type, cqe, len, access);
    CHECK(sv_ep_connect(a, b->qp->qp_num, &b->gid) == 0);
    CHECK(sv_ep_connect(b, a->qp->qp_num, &a->gid) == 0);
}

int sv_send(sv_ep *e, enum ibv_wr_opcode op, uint64_t id, size_t off, size_t len, unsigned flags,
            uint64_t raddr, uint32_t rkey)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t)(e->buf + off), .length = (uint32_t)len, .lkey = e->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = id,
                             .sg_list = &sge,
                             .num_sge = 1,
                             .opcode = op,
                             .send_flags = flags,
                             .imm_data = htobe32(0xabcd)};
    struct ibv_send_wr *bad = NULL;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    return ibv_post_send(e->qp, &wr, &bad);
}

int sv_recv(sv_ep *e, uint64_t id, size_t off, size_t len)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t)(e->buf + off), .length = (uint32_t)len, .lkey = e->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad = NULL;
    return ibv_post_recv(e->qp, &wr, &bad);
}

int sv_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited++) {
        int n = ibv_poll_cq(cq, 1, wc);
        if (n != 0)
            return n < 0 ? -1 : 1;
        sleep_ms(1);
    }
    return 0;
}
