/* backends/rdma/rdma_impl.h - the RDMA backend's private structures, shared by its files.
 *
 * Words: a link is this rank's connection to one peer: a QP on one device plus a TCP side channel
 * (set-up exchange, liveness, abort and bye). A frame is one SEND: a 48-byte header and up to a
 * slot of payload; a message is cut into frames in order. Each device has one registered pool,
 * carved into slots: per link RECV_SLOTS posted receives and SEND_SLOTS frames being sent.
 *
 * Flow control (credits): a frame is sent only into a receive the peer has posted, so nothing is
 * ever dropped for want of a RECV (UC drops it silently). The peer posted DATA_SLOTS receives for
 * data frames: those are our credits, and every frame it sends back returns the slots it reposted
 * since. CTRL_SLOTS more receives take credit-only frames, sent when returns pile up and nothing
 * goes the other way; their slots come back through the ctrl_seen count in every frame. Frames
 * carry a sequence number, so a frame lost or reordered on UC is an error, never wrong data. */
#ifndef TETHER_RDMA_IMPL_H
#define TETHER_RDMA_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include "backends/tcp/frame.h"
#include "core/transport.h"
#include "verbs.h"

#define SLOT_SIZE (64u << 10)
#define DATA_SLOTS 16
#define CTRL_SLOTS 2
#define RECV_SLOTS (DATA_SLOTS + CTRL_SLOTS)
#define SEND_SLOTS 16
#define LINK_SLOTS (RECV_SLOTS + SEND_SLOTS)

#define FRAME_DATA 0x52444101u
#define FRAME_CREDIT 0x52444102u

typedef struct rdma_hdr {
    uint32_t type;      /* FRAME_DATA or FRAME_CREDIT */
    uint32_t seq;       /* frame number on this link, from 0 */
    uint32_t credits;   /* data receives the sender reposted for us since its last frame */
    uint32_t ctrl_seen; /* credit-only frames of ours the sender has taken in, in all */
    tether_tag tag;
    uint64_t msglen;    /* bytes of the whole message */
    uint64_t offset;    /* where this frame's payload goes in it */
} rdma_hdr;

#define SLOT_PAYLOAD (SLOT_SIZE - sizeof(rdma_hdr))

typedef struct rdma_dev {
    char name[64];
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq;
    struct ibv_mr *mr;
    unsigned char *pool;
    size_t pool_len;
    int nlinks;          /* links on this device: the pool has LINK_SLOTS slots for each */
    int gid_index;       /* of the IPv4-mapped GID, found by scanning */
    union ibv_gid gid;
    enum ibv_mtu mtu;
    int max_qp;
} rdma_dev;

/* What a side of a link tells the other before RTR. */
typedef struct rdma_qp_info {
    uint32_t qpn, psn;
    union ibv_gid gid;
    uint32_t mtu;
} rdma_qp_info;

typedef struct rdma_link {
    int peer;
    rdma_dev *dev;
    int first_slot;       /* index of its first slot in dev->pool */
    struct ibv_qp *qp;
    uint32_t max_inline;
    char addr[96];        /* the peer's side-channel address, for messages */
    /* flow control */
    int credits;          /* data frames we may still send */
    uint32_t ctrl_sent, ctrl_acked;
    uint32_t pending;     /* data receives reposted since we last told the peer */
    uint32_t ctrl_seen;
    uint32_t tx_seq, rx_seq;
    int free_send[SEND_SLOTS];
    int nfree_send;
    /* messages */
    struct tether_req *sendq, *sendq_tail; /* sends not yet wholly framed, in order */
    tether__rxq posted, unexpected;
    tether__rxmsg *cur;   /* the message whose frames are arriving, or NULL */
    /* side channel */
    int fd;
    unsigned char side_buf[16 + 1024];
    size_t side_len;
    int bye;              /* the peer closed normally after sending bye_frames frames */
    uint32_t bye_frames;
    int eof;
} rdma_link;

struct tether_req {
    struct tether_req *prev, *next; /* the endpoint's live requests */
    struct tether_req *qnext;       /* a send's place in its link's queue */
    int is_send, peer, done;
    const unsigned char *buf;       /* send: the user's bytes */
    size_t len, framed;             /* send: bytes in all, bytes already in frames */
    int started;                    /* send: its first frame is out (a 0-byte message has one) */
    tether_tag tag;
    tether__rxmsg rx;               /* receive */
};

typedef struct rdma_ep {
    pthread_mutex_t mu;
    tether__ibv ibv;
    int rank, size;
    int uc;               /* 1: UC QPs (TETHER_RDMA_QP=uc), 0: RC */
    int ndev;
    rdma_dev *devs;
    rdma_link *links;     /* per world rank; links[rank] is unused */
    struct tether_req *live;
    int err;
    char errmsg[TETHER_ERRMSG_MAX];
} rdma_ep;

/* Break ep (first failure wins) and return code; later calls return it. Caller holds ep->mu. */
int tether__rdma_break(rdma_ep *ep, int code, const char *fmt, ...) TETHER_PRINTF(3, 4);

/* device.c */
int tether__rdma_dev_open(rdma_ep *ep, rdma_dev *d, struct ibv_device *dev);
int tether__rdma_dev_pool(rdma_ep *ep, rdma_dev *d);
void tether__rdma_dev_close(rdma_ep *ep, rdma_dev *d);
/* Take and acknowledge every event waiting on the device's channel (it is non-blocking). */
void tether__rdma_dev_events(rdma_ep *ep, rdma_dev *d);
unsigned char *tether__rdma_slot(const rdma_link *l, int slot);

/* qp.c */
int tether__rdma_qp_create(rdma_ep *ep, rdma_link *l);
int tether__rdma_qp_connect(rdma_ep *ep, rdma_link *l, const rdma_qp_info *mine,
                            const rdma_qp_info *peer);

/* io.c: the data path. Caller holds ep->mu. */
int tether__rdma_post_recv(rdma_ep *ep, rdma_link *l, int slot);
int tether__rdma_progress(rdma_ep *ep, int *moved);
int tether__rdma_push(rdma_ep *ep, rdma_link *l);
int tether__rdma_claim(rdma_ep *ep, rdma_link *l, struct tether_req *r);
int tether__rdma_gone_check(rdma_ep *ep, rdma_link *l);

/* side.c: the TCP side channel. */
int tether__rdma_side_open(const tether_config *cfg, rdma_ep *ep);
int tether__rdma_side_swap(rdma_ep *ep, rdma_link *l, const void *mine, void *theirs, size_t len,
                           int64_t deadline_ms);
int tether__rdma_side_read(rdma_ep *ep, rdma_link *l);
void tether__rdma_side_say(rdma_ep *ep, uint32_t type, int code, const char *text);

#define SIDE_BYE 1u
#define SIDE_ABORT 2u

#endif
