/* softverbs.h - the verbs emulator's model, shared by its files: devices, PDs, MRs, CQs, QPs,
 * links.
 *
 * One process-wide lock (softverbs__lock) guards every object: verbs calls take it, and so does the
 * service thread (link.c) that moves frames between processes over Unix stream sockets. Nothing
 * blocks while it is held: every socket is non-blocking and every wait is a poll() with a deadline.
 * Exported names are the libibverbs ones; shared internals are softverbs__*, the rest static.
 */
#ifndef SOFTVERBS_H
#define SOFTVERBS_H

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define SV_EXPORT __attribute__((visibility("default")))

#define SV_MAX_DEVICES 16
#define SV_GID_TBL_LEN 8
#define SV_MAX_SGE 8 /* what the linux profile grants; apple grants 1 */

/* What a device allows; "apple" is the strictest reading of Apple's TN3205, "linux" a RoCE NIC. */
typedef struct sv_profile {
    const char *name;
    int max_qp, max_mr, max_cq, max_cqe, max_qp_wr, max_sge, max_inline;
    uint32_t max_msg;
    int page_aligned_mr; /* registered buffers must start on a page boundary */
    int uc_rdma;         /* UC QPs may carry RDMA WRITE */
    int ib; /* InfiniBand link layer: LIDs, no IPv4-mapped GID (the address is IPoIB's) */
    enum ibv_mtu mtu;
} sv_profile;

/* The process's settings, read once from SOFTVERBS_* (topology.c). */
typedef struct sv_env {
    sv_profile prof;
    char dir[96];  /* SOFTVERBS_DIR: where QP sockets live */
    long delay_us; /* SOFTVERBS_DELAY_US: completions become visible this much later */
    int debug;     /* SOFTVERBS_DEBUG: say on stderr why a call failed */
} sv_env;

typedef struct sv_device {
    struct ibv_device dev;             /* first: what callers hold */
    int index;                         /* its LID on the ib profile is index + 1 */
    union ibv_gid gid[SV_GID_TBL_LEN]; /* an all-zero entry is empty */
    struct in_addr ip;                 /* its address (RoCE: in its GID; ib: IPoIB's) */
    int has_ip;
    int nqp, nmr, peak_qp, peak_mr;    /* live and most, for the per-device limits and stats */
    uint64_t down_at_us, up_at_us;     /* SOFTVERBS_DEVICE_DOWN (fault.c); 0 = never */
    uint64_t mute_at_us, unmute_at_us; /* SOFTVERBS_DEVICE_SILENT (fault.c); 0 = never */
    int is_down;                       /* as the service thread last saw it */
} sv_device;

typedef struct sv_context {
    struct ibv_context ctx; /* first */
    sv_device *dev;
    int npd, ncq, nchannel, nqp, nmr;
} sv_context;

typedef struct sv_pd {
    struct ibv_pd pd;
    int nmr, nqp;
} sv_pd;

typedef struct sv_mr {
    struct ibv_mr mr;
    int access;
    struct sv_mr *next;
} sv_mr;

/* A completion waiting in a CQ. span: how many send WRs its polling retires (unsignaled ones
 * before it, plus itself), which is when their send-queue slots free up, as on hardware. */
typedef struct sv_cqe {
    struct ibv_wc wc;
    uint64_t ready_us; /* not visible before (SOFTVERBS_DELAY_US) */
    int announced;     /* already considered for a channel event */
    int solicited;
    unsigned span; /* 0 for receive completions */
} sv_cqe;

typedef struct sv_cq {
    struct ibv_cq cq; /* first */
    sv_cqe *ring;
    int cap, head, count;
    int overflow;    /* a completion found the CQ full: the CQ is broken for good */
    int armed;       /* 0, 1 = next completion, 2 = next solicited one */
    uint32_t events; /* events ibv_get_cq_event returned, to match ibv_ack_cq_events */
    int nqp;
    struct sv_cq *next;
} sv_cq;

typedef struct sv_channel {
    struct ibv_comp_channel ch; /* first; ch.fd is the read end of a pipe */
    int wfd;
    int ncq;
} sv_channel;

enum { SV_WR_NEW, SV_WR_WRITING, SV_WR_WAIT_ACK, SV_WR_WAIT_RETRY };

/* A send work request, copied at post time (inline payload included, as hardware does). */
typedef struct sv_swr {
    struct sv_swr *next;
    uint64_t wr_id;
    enum ibv_wr_opcode opcode;
    unsigned flags; /* IBV_SEND_* */
    uint32_t imm, rkey;
    uint64_t raddr;
    int nsge;
    struct ibv_sge sge[SV_MAX_SGE];
    unsigned char *inl; /* inline payload, or NULL */
    size_t len;         /* total payload bytes */
    int state;          /* SV_WR_* */
    uint32_t psn;
    int retry_left, rnr_left;
    uint64_t due_us; /* SV_WR_WAIT_RETRY: when it goes again; 0 = never (timeout 0) */
} sv_swr;

typedef struct sv_rwr {
    struct sv_rwr *next;
    uint64_t wr_id;
    int nsge;
    struct ibv_sge sge[SV_MAX_SGE];
} sv_rwr;

typedef struct sv_conn sv_conn;

typedef struct sv_qp {
    struct ibv_qp qp; /* first */
    uint64_t id;      /* never reused, so the service thread can tell a QP destroyed under it */
    struct ibv_qp_attr attr;      /* as last set by ibv_modify_qp */
    struct ibv_qp_init_attr init; /* caps as granted */
    sv_device *dev;
    int listen_fd;           /* peers' links arrive here: SOFTVERBS_DIR/qp-<qpn> */
    sv_conn *out;            /* our link to the peer QP, made by the first send */
    int link_down;           /* the link to the peer broke: the next send fails */
    uint64_t connect_due_us; /* a connect found the peer's backlog full: try then */
    sv_swr *sq_head, *sq_tail;
    int sq_outstanding;  /* posted and not yet retired by polling a send CQE */
    unsigned unsignaled; /* unsignaled successes since the last send CQE */
    sv_rwr *rq_head, *rq_tail;
    int rq_count;
    uint32_t sq_psn, rq_psn; /* next PSN to send, next expected */
    struct sv_qp *next;
} sv_qp;

/* Wire frames between processes. Same machine, so host byte order. */
enum { SV_HELLO = 1, SV_SEND, SV_WRITE, SV_RESP };
enum { SV_F_IMM = 1, SV_F_SOLICITED = 2 };
enum { SV_ACK, SV_RNR, SV_DROP, SV_NAK_ACCESS, SV_NAK_INVALID, SV_NAK_OP };
#define SV_MAGIC 0x53566231u /* "SVb1" */

typedef struct sv_hdr {
    uint32_t magic;
    uint16_t kind;  /* SV_HELLO .. SV_RESP */
    uint16_t flags; /* SV_F_* */
    uint32_t psn;
    uint32_t imm; /* SV_RESP with SV_RNR: the receiver's min_rnr_timer */
    uint32_t rkey;
    uint32_t status; /* SV_RESP: SV_ACK .. SV_NAK_OP */
    uint64_t raddr;
    uint64_t len; /* payload bytes after the header */
} sv_hdr;

/* First frame on a link: who sends, to whom, with which GIDs (checked against the RTR settings). */
typedef struct sv_hello {
    uint32_t src_qpn, dst_qpn;
    union ibv_gid sgid, dgid; /* zero without a GRH (ib: addressed by LID) */
    uint16_t slid, dlid;      /* zero on RoCE */
} sv_hello;

extern pthread_mutex_t softverbs__lock;
extern sv_env softverbs__env;
extern sv_qp *softverbs__qps;
extern sv_cq *softverbs__cqs;

/* topology.c */
uint64_t softverbs__now_us(void);
void softverbs__note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int softverbs__fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One message went out: write, an RDMA WRITE (SOFTVERBS_STATS counts them apart too). */
void softverbs__count_tx(size_t bytes, int write);
int softverbs__env_long(const char *name, long def, long min, long max, long *out);
long softverbs__rank(void);
sv_device *softverbs__device_list(int *n);

/* fault.c: loss, jitter, devices going down or silent (SOFTVERBS_LOSS, _JITTER_US, _DEVICE_DOWN,
 * _DEVICE_SILENT ...) */
int softverbs__fault_load(void);
int softverbs__fault_drop(int resend); /* 1: lose this data frame */
uint64_t softverbs__fault_jitter_us(void);
int softverbs__fault_dev_down(const sv_device *d, uint64_t now);
int softverbs__fault_dev_silent(const sv_device *d, uint64_t now);
uint64_t softverbs__fault_tick(uint64_t now);

/* memory.c: 0 if [addr, addr+len) lies in an MR of pd with key and all of access, else -1. */
int softverbs__mr_check(struct ibv_pd *pd, uint32_t key, int by_rkey, uint64_t addr, uint64_t len,
                        int access);

/* cq.c; poll and notify are the context ops behind the header's inline ibv_poll_cq and
 * ibv_req_notify_cq */
int softverbs__poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int softverbs__req_notify_cq(struct ibv_cq *cq, int solicited_only);
int softverbs__cq_push(sv_cq *cq, const struct ibv_wc *wc, unsigned span, int solicited);
uint64_t softverbs__cq_tick(uint64_t now);

/* qp.c */
sv_qp *softverbs__qp_find(uint32_t qpn);
int softverbs__gid_index(const sv_device *d, const union ibv_gid *gid);
uint16_t softverbs__lid(const sv_device *d); /* 0 on RoCE */

/* One line on stderr, "who[pid]: message", with strerror(err) after it when err is not 0: the
 * emulators' notes and (SOFTVERBS_DEBUG=1) failures, the connection manager's (cm/) too. */
SV_EXPORT void softverbs_vsay(const char *who, int err, const char *fmt, va_list ap);

/* For the connection manager emulator (cm/): 0 and the device's address in *ip, or ENOENT when it
 * has none. */
SV_EXPORT int softverbs_device_address(struct ibv_device *dev, struct in_addr *ip);

/* post.c: finishing work requests, the QP error state */
void softverbs__send_done(sv_qp *qp, enum ibv_wc_status st);
void softverbs__recv_done(sv_qp *qp, enum ibv_wc_status st, uint32_t len, const sv_hdr *h,
                          uint32_t src_qp);
void softverbs__qp_error(sv_qp *qp, enum ibv_wc_status head_status);
void softverbs__qp_drain(sv_qp *qp);
int softverbs__post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int softverbs__post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/* proto.c: what a frame does at each end */
void softverbs__qp_kick(sv_qp *qp, uint64_t now);
uint64_t softverbs__qp_due(const sv_qp *qp);
void softverbs__on_frame(sv_conn *c, sv_qp *qp, const sv_hdr *h, unsigned char *payload);
void softverbs__link_lost(sv_qp *qp);

/* link.c: sockets and the service thread */
enum { SV_LINK_UP, SV_LINK_BUSY, SV_LINK_NONE };
int softverbs__listen(sv_qp *qp);
int softverbs__link_connect(sv_qp *qp);
unsigned char *softverbs__link_reserve(sv_conn *c, const sv_hdr *h);
int softverbs__link_flush(sv_conn *c);
int softverbs__link_idle(const sv_conn *c);
const sv_hello *softverbs__link_hello(const sv_conn *c);
void softverbs__link_close_out(sv_qp *qp);
void softverbs__link_close_qp(sv_qp *qp);
void softverbs__wake(void);
int softverbs__service_start(void);
void softverbs__service_stop(void);

#endif
