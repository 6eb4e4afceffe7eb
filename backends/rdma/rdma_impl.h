/* backends/rdma/rdma_impl.h - the RDMA backend's private structures, shared by its files. Each
 * file's functions are declared in a header named after it (io.h for io.c), which includes this.
 *
 * Words: a peer is another world rank: a TCP side channel to it (set-up exchange, liveness, abort
 * and bye), the receives posted for messages from it, and its links. A link is one QP to a peer on
 * one device (one cable); a peer has one link per device its matrix entry names, none when it is
 * not a ring neighbour (its messages are forwarded). A frame is one SEND: a 64-byte header and up
 * to a slot of payload; a message is cut into frames in order. Each device has one registered
 * pool, carved into slots: per link RECV_SLOTS posted receives and SEND_SLOTS frames being sent.
 *
 * Striping: a large message to a peer with several links is cut into one part per link, the same
 * way on both sides (part_bounds in io.c, from the message length), and each part travels and is
 * matched on its own link. Forwarding (route.c): a message for a rank with no link goes whole on
 * the first link towards it; each rank on the way passes its frames on as they come (cut-through,
 * io.c): a frame waits in its receive slot, unreposted, until the onward link can take it, so
 * the sender upstream runs out of credits instead of this rank filling memory.
 *
 * Flow control (credits): a frame is sent only into a receive the peer has posted, so nothing is
 * ever dropped for want of a RECV (UC drops it silently). The peer posted DATA_SLOTS receives for
 * data frames: those are our credits, and every frame it sends back says how many data frames it
 * has handled and reposted in all (a count, not a difference, so a lost frame loses no credit).
 * CTRL_SLOTS more receives take control frames (credits and acknowledgements alone), sent when
 * returns pile up, or when the link goes quiet, and nothing goes the other way; their slots come
 * back through the ctrl_seen count in every frame. Control frames are never held back, so
 * withholding data credits cannot stop credit returns.
 *
 * Loss (UC; retransmit.c): data frames carry a sequence number and every frame the number of the
 * peer's data frames taken in order (ack). On RC a gap is an error (the NIC resends). On UC the
 * sender keeps each data frame in its send slot until acknowledged and sends it and those after it
 * again (go-back-N) when the receiver reports a gap (a NACK: a later frame came first), or after a
 * timeout probes with the oldest alone (a lost last frame: the probe's answer shows what is
 * missing); the receiver drops a duplicate or a frame after a gap by its number
 * and reposts its slot. A lost SEND consumes no receive on UC, so a resent frame finds the receive
 * its first copy would have taken; a duplicate takes one until reposted, which at worst makes
 * another frame lost and resent. Control frames are not resent (all they carry is cumulative): one
 * not seen by the peer within the resend timeout is counted lost, so its receive is free again.
 *
 * Cables (failover.c, rejoin.c): a link whose peer has other links keeps its data frames until
 * acknowledged on RC too, and on every link a kept frame stays until the peer has also handled it
 * (its credit came back), not only taken it. When a link fails (a QP error, or the peer's word on
 * the side channel) both sides drop the frames they took on it but have not handled (a frame
 * passing through that waits for room onward) and say how many they handled; what the other did
 * not handle goes again on the first live link to that peer, followed by the dead link's queue.
 * A frame held in a dead link's receive slot would be one more than the credits of the link that
 * carries its lane now allow: a ring whose slots all hold frames that wait for the next rank's,
 * with none free, could form (it did, at N = 8 with a cable down and the ring busy); frames carry
 * their part's lane (HDR_LANE), so they are matched on it whichever link brings them. A device that
 * comes back gets a fresh QP pair, exchanged on the side channel, and its link carries its lane
 * again.
 *
 * Passing frames (ring mode): a link carries one own message of its rank at a time, but frames
 * passing through go out between them, as soon as the onward link has a credit, so a frame is
 * found by its origin (rdma_peer.arriving: at most one message per origin and lane is under way,
 * since each origin's frames keep their order on every link). Ranks that all pass traffic the same
 * way round while sending their own (n >= 5) could still fill every receive slot of the cycle
 * with frames that wait for the next one; so a rank's own frames on a link that may carry passing
 * ones (the first cable, or the one carrying its work while it is out) need two credits and leave
 * one (OWN_SPARE), and passing frames need one: the slots of the
 * cycle never all fill, some passing frame can always move, and no rank holds more than its
 * receive slots (bubble flow control, as in ring networks on chips). A rank holding frames back
 * returns its reposted slots' credits at once, so that a free slot is never hidden upstream. */
#ifndef TETHER_RDMA_IMPL_H
#define TETHER_RDMA_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backends/net/endpoint.h"
#include "backends/net/frame.h"
#include "backends/net/loop.h"
#include "core/clock.h"
#include "core/heartbeat.h"
#include "core/transport.h"
#include "verbs.h"

#define SLOT_SIZE (64u << 10)
#define DATA_SLOTS 16
#define CTRL_SLOTS 2
#define RECV_SLOTS (DATA_SLOTS + CTRL_SLOTS)
#define SEND_SLOTS (DATA_SLOTS + CTRL_SLOTS) /* UC keeps up to DATA_SLOTS frames for resends */
#define LINK_SLOTS (RECV_SLOTS + SEND_SLOTS)

#define FRAME_DATA 0x52444101u
#define FRAME_CREDIT 0x52444102u

#define MAX_CABLES 4            /* links per peer: Apple allows about 10 QPs per device anyway */
#define STRIPE_MIN (256u << 10) /* smaller messages to a peer go whole on its first link */
#define OWN_SPARE 1             /* credits a rank's own frames leave for passing ones (above) */

#define HDR_NACK 1u  /* rdma_hdr.flags: frame ack is missing: send it and those after it again */
#define HDR_PROBE 2u /* data: a resend after a timeout, answer at once; control: the answer */
/* control: the sender has frames waiting for credits; answer at once (the credits it lacks may
 * have been told in a control frame that UC lost, and nothing else would tell them again) */
#define HDR_WANT 4u
/* Bits 8-15 of a data frame's flags: the lane whose part it belongs to (failover.c: a dead cable's
 * frames go on another link, and the receiver matches them on their own lane). */
#define HDR_LANE_SHIFT 8
#define HDR_LANE_MASK 0xff00u
/* Rendezvous (io.c, register.c): a data frame whose payload is an rdma_rv, not message bytes. RTS:
 * the sender announces a message (its header's tag and msglen) to come by RDMA WRITE; CTS: the
 * receiver's buffer for it, registered; FIN: the WRITE is in (RC places it before this SEND). */
#define HDR_RTS 0x10000u
#define HDR_CTS 0x20000u
#define HDR_FIN 0x40000u
#define HDR_RV_MASK (HDR_RTS | HDR_CTS | HDR_FIN)
#define RV_MAX 32                      /* messages per link in rendezvous at a time (ids 0..31) */
#define RV_WRITE_MAX ((size_t)1 << 30) /* larger messages go as frames (one WRITE each) */
_Static_assert(RV_MAX <= 32, "rdma_link.go_due and cts_due hold a bit per rendezvous id");

typedef struct rdma_rv {
    uint64_t addr; /* CTS: where the bytes go */
    uint32_t rkey; /* CTS: its key */
    uint32_t id;   /* the sender's number for the message, 0..RV_MAX - 1 (a bit of go_due, cts_due),
                      until its FIN */
} rdma_rv;

typedef struct rdma_hdr {
    uint32_t type;      /* FRAME_DATA or FRAME_CREDIT */
    uint32_t seq;       /* data: frame number on this link, from 0; control: the next one's */
    uint32_t credits;   /* data frames of ours the sender has handled and reposted, in all */
    uint32_t ctrl_seen; /* control frames of ours the sender has taken in, in all */
    uint32_t ack;       /* data frames of ours the sender has taken in order, in all */
    uint32_t flags;     /* HDR_NACK, HDR_PROBE */
    tether__tag tag;
    uint64_t msglen;   /* bytes of the whole message */
    uint64_t offset;   /* where this frame's payload goes in this link's part of it */
    uint32_t src, dst; /* origin and destination rank: a rank on the way passes it on */
} rdma_hdr;

_Static_assert(sizeof(rdma_hdr) == 64, "the frame header is 64 bytes on every platform");

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
    int nlinks;    /* links on this device: the pool has LINK_SLOTS slots for each */
    int borrowed;  /* ctx is rdma_cm's (cm.c): its GID unused, never closed here */
    int gid_index; /* of the IPv4-mapped GID, found by scanning */
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

typedef struct rdma_part rdma_part;

/* A data frame kept for a resend (UC) until the peer acknowledges it. */
typedef struct rdma_kept {
    int slot, len;
    int64_t sent_us; /* when it last went */
    int resent;      /* sent more than once: no round-trip sample from it */
} rdma_kept;

#define NACK_ANSWER 2

/* UC retransmission state of a link (retransmit.c). */
typedef struct rdma_window {
    rdma_kept kept[DATA_SLOTS]; /* frames freed .. tx_seq - 1, by number % DATA_SLOTS */
    uint32_t acked;             /* our data frames the peer has taken in order, in all */
    uint32_t freed;             /* of those, the ones it has handled too: no longer kept */
    uint32_t rewind;            /* the next frame to send again, while rewinding */
    int rewinding;              /* frames rewind .. tx_seq - 1 go again, in order */
    int probing;                /* frame probe went again alone after a timeout, */
    uint32_t probe, probe_end;  /* when frames up to probe_end - 1 had gone */
    int backoff;                /* timeouts in a row with nothing acknowledged: doubles the wait */
    int64_t srtt_us;            /* smoothed round trip, 0 before the first sample */
    uint32_t ack_told;          /* rx_seq as we last told the peer */
    int64_t taken_us;           /* when a frame not yet acknowledged was first taken */
    int ack_owed;               /* a duplicate came: acknowledge again even if told */
    uint32_t nacked;            /* rx_seq + 1 when a NACK went for it, else 0 */
    int nack_owed;              /* a gap seen, or NACK_ANSWER: a probe, not yet told */
} rdma_window;

typedef struct rdma_link {
    int peer, lane; /* the rank it reaches, and which of that rank's links it is */
    rdma_dev *dev;
    int first_slot; /* index of its first slot in dev->pool */
    struct ibv_qp *qp;
    struct rdma_cm_id *cm_id; /* its connection through rdma_cm (cm.c); NULL with a matrix */
    uint32_t max_inline;
    /* flow control */
    int credits;            /* data frames we may still send */
    uint32_t peer_released; /* the peer's last credits count (rdma_hdr.credits) */
    uint32_t ctrl_out;      /* control frames sent, not yet seen by the peer nor counted lost */
    uint32_t ctrl_acked;    /* the peer's last ctrl_seen */
    int64_t ctrl_us;        /* when the last control frame went */
    uint32_t released;      /* data frames of the peer's handled and reposted, in all */
    uint32_t pending;       /* of those, reposted since we last told the peer */
    uint32_t ctrl_seen;
    uint32_t tx_seq, rx_seq; /* data frames only */
    int free_send[SEND_SLOTS];
    int nfree_send;
    uint8_t slot_refs[SEND_SLOTS]; /* per send slot: its WRs not yet completed, +1 while kept */
    rdma_window win;               /* UC: frames kept for resends, and acknowledgements */
    /* messages */
    rdma_part *sendq, *sendq_tail; /* own parts not yet wholly framed, in order */
    /* data frames in, not yet handled, oldest first, still in their receive slots (not reposted:
     * the peer's credits are held back) */
    int held[DATA_SLOTS], held_len[DATA_SLOTS], held_head, nheld;
    /* Data frames taken in and handled on this link so far (never reset), and the count taken
     * before the peer's last fence (io.c: a lane that moves between links keeps its order). fresh:
     * back (rejoin.c) and no data frame taken since. */
    uint64_t taken_n, run_n, fence;
    int fresh;
    /* failover (failover.c): out of use since we said so; the peer said so too, having taken
     * peer_rx of our frames; then its frames from refeed on and its queue go on a live link */
    int down, peer_down, failed_over;
    uint32_t peer_rx, refeed;
    int turn; /* a live link: which dead sibling's work it carries next */
    /* rejoin (rejoin.c): its device is back: a fresh QP (gen counts them: in its work requests'
     * ids, so the old one's completions are told apart), connected once the peer's details came
     * (peer_info), used again once the peer's is connected too and the lane's frames carried
     * elsewhere are all in; rejoins: times it came back */
    int gen, rejoin, have_peer_info, peer_rejoined, rejoins;
    rdma_qp_info mine, peer_info;
    /* silence (silence.c, UC): frames taken in on it (any, io.c), that count at the last look and
     * when it last grew */
    uint32_t frames_in, frames_seen;
    int64_t heard_us;
    /* out with its port up (rejoin.c): not tried again before rejoin_after_us; times it left so
     * since it last settled; when it last came back */
    int64_t rejoin_after_us, back_us;
    /* UC: frames (own or passing through) wait for credits since starved_us; credit probes
     * (HDR_WANT) sent since credits last came (retransmit.c) */
    int starved, credit_probes;
    int64_t starved_us;
    int leaves;
    /* Back (rejoin.c): its lane's frames the carrier took there were not all handled yet (some
     * wait for room onward, and the peer takes this link's only after them): this link holds owed
     * of its credits back until the carrier's peer_released passes owed_mark (the carrier's
     * tx_seq then), so the lane never has more frames waiting at the peer than one link's
     * credits, as a ring's flow control needs (io.c: OWN_SPARE). */
    int owed, owed_lane;
    uint32_t owed_mark;
    /* Rendezvous (RC, one link to the peer), by id. Sender: rv_out, messages announced until their
     * WRITE completes; go_due, ids whose CTS came (WRITE and FIN to post). Receiver: rv_in,
     * receives given to the peer's WRITE until its FIN; rv_unexp, announcements no receive took
     * yet; cts_due, ids whose CTS is to go. */
    rdma_part *rv_out[RV_MAX], *rv_in[RV_MAX];
    tether__rxmsg *rv_unexp[RV_MAX];
    unsigned go_due, cts_due;
} rdma_link;

/* A message of one origin's arriving here: the part for this rank whose frames come in, or the
 * message passing through. One per origin and lane at a time: an origin's frames keep their
 * order. */
typedef struct rdma_arriving {
    tether__rxmsg *cur;
    struct tether__req *fwd;
} rdma_arriving;

/* Another world rank: side channel, matching queues (per link: parts match on their own link;
 * forwarded messages on the first), and the links to it. */
/* Side-channel messages: a 16-byte header (type, code, links, payload length), then the payload:
 * an abort's reason (SIDE_TEXT_MAX at most), a bye's frame counts, a heartbeat's wait-state
 * records (SIDE_BEAT_MAX at most: with the header well inside any socket's smallest send buffer,
 * so a heartbeat into an empty one is written whole). */
#define SIDE_HDR 16u
#define SIDE_TEXT_MAX 1024u
#define SIDE_BEAT_MAX 2048u
#define SIDE_PAYLOAD_MAX SIDE_BEAT_MAX

typedef struct rdma_peer {
    int nlinks;
    rdma_link link[MAX_CABLES];
    tether__rxq posted[MAX_CABLES], unexpected[MAX_CABLES];
    rdma_arriving arriving[MAX_CABLES]; /* its message under way here, per lane (io.c lane_of) */
    int fenced; /* a link's frames taken since the fence wait for its siblings' older ones */
    /* side channel */
    int fd;
    char addr[96]; /* its side-channel address, for messages */
    unsigned char side_buf[SIDE_HDR + SIDE_PAYLOAD_MAX];
    size_t side_len;
    uint64_t side_bytes; /* read from the side channel so far (liveness: heartbeat.c) */
    /* It is closing normally (bye), its own messages all sent: bye_frames[k] frames on link k. A
     * ring rank lingers, passing on others' frames, and says bye again when it leaves for good
     * (bye_final), with the counts of every frame it sent. */
    int bye, bye_final;
    uint32_t bye_frames[MAX_CABLES];
    int eof;        /* its side channel ended (after its bye) */
    int64_t eof_ms; /* when */
} rdma_peer;

/* One link's share of a message: all of it, or one stripe. */
struct rdma_part {
    struct tether__req *req;
    rdma_part *qnext;       /* send: its place in its link's queue */
    int lane;               /* send: the receiver's lane for it (its frames' HDR_LANE bits) */
    size_t lo, len, framed; /* send: where it starts, its bytes, those already in frames */
    tether__rxmsg rx;       /* receive */
    /* Rendezvous: rv, a send part that goes by RDMA WRITE once the receiver says where (CTS:
     * raddr, rkey); mr, the buffer's registration while its WRITE may touch it (both sides). */
    int rv;
    uint64_t raddr;
    uint32_t rkey;
    struct ibv_mr *mr;
};

struct tether__req {
    tether__net_live live; /* first: its place among the live requests (not forwards) */
    int is_send, peer, done;
    int nparts, parts_left;
    const unsigned char *buf; /* send: the bytes */
    size_t len;
    tether__tag tag;
    uint32_t src, dst; /* send: what its frames carry; a forward (passing through) has no buf */
    rdma_part part[MAX_CABLES];
};

typedef struct rdma_ep {
    pthread_mutex_t mu;
    tether__ibv ibv;
    int rank, size;
    int uc;            /* 1: UC QPs (TETHER_RDMA_QP=uc), 0: RC */
    int ring;          /* ring mode: links to the two neighbours only, the rest forwarded */
    int keeps;         /* some link keeps frames until acknowledged (tether__rdma_keeps) */
    int64_t rejoin_us; /* rejoin.c: when the ports of dead links are next looked at */
    int ndev;
    rdma_dev *devs;
    rdma_peer *peers;       /* per world rank; peers[rank] is unused */
    tether__net_live *live; /* the live requests, freed by close() */
    int err;
    char errmsg[TETHER__ERRMSG_MAX];
    tether__loop *loop; /* ring mode: the thread that forwards while the program is away */
    /* Ring mode: the program's threads move the frames themselves while they are inside calls
     * (wait() sleeps in poll() as in a full mesh) and the thread stands by (ring_thread.c). calls
     * counts isend, irecv, test and wait; calls_seen is the count the thread saw last; drivers
     * the threads asleep in wait()'s own poll() now. */
    uint64_t calls, calls_seen;
    int drivers;
    int propagated;         /* that thread told every peer of the break */
    uint64_t events;        /* bumped when requests may have finished, for waiters on loop */
    _Atomic uint64_t moved; /* successful completions (the vtable's moved()) */
    /* UC loss (retransmit.c): TETHER_RDMA_RESEND_MS in microseconds (0: from the round trip), and
     * what it cost: frames sent again, duplicates and frames after a gap dropped */
    int64_t resend_us;
    uint64_t resent, dups, gaps;
    /* Rendezvous: TETHER_RDMA_WRITE_MIN (0: off); payload bytes that came by WRITE (messages), and
     * that were copied out of receive slots (those of messages from write_min up); registrations
     * of message buffers live now and at most (register.c) */
    uint64_t write_min, written, written_msgs, copied, copied_big;
    int mrs, mrs_peak;
    int beat_ms;    /* TETHER_HEARTBEAT (silence.c: a silent peer is the heartbeats' to name) */
    int ack_due_ms; /* after the last progress: when an acknowledgement is due alone, -1 none */
    tether__rxcache rxcache;     /* blocks for unexpected messages */
    tether__heartbeat *beat;     /* heartbeats on the side channels (heartbeat.c); NULL when none */
    tether__net_records records; /* what the heartbeats carry (heartbeat.c) */
    tether__passed *passed;      /* judges stale messages (core/passed.h); NULL: none judged */
    tether__passed_seen seen;    /* when the kept messages were last looked at */
    uint64_t recvs;              /* receives posted so far */
    /* tether__rdma_push (io.c), for failover.c and rejoin.c, which io.c calls: a link's frames
     * moved to another, or a cable back, go out at once. A pointer, not a call, so those files
     * never call back into the data path (tests/layers). */
    int (*push)(struct rdma_ep *ep, struct rdma_link *l);
    struct tether__rdma_cm *cm; /* cm.c: the links' connection manager; NULL with a matrix */
    /* cm.c's maker of a QP on a link's cm_id (NULL with errno, as ibv_create_qp), for qp.c: a
     * pointer, not a call, as push is, so that qp.c never calls back into cm.c (tests/layers) */
    struct ibv_qp *(*cm_make_qp)(struct rdma_ep *ep, struct rdma_link *l,
                                 struct ibv_qp_init_attr *ia);
} rdma_ep;

#define SIDE_BYE 1u    /* code: BYE_CLOSING or BYE_CLOSED; payload: the frames sent per link */
#define BYE_CLOSING 0u /* its messages are sent; it still takes frames (ring: passes them on) */
#define BYE_CLOSED 1u  /* it leaves: no frame goes or is taken any more */
#define SIDE_ABORT 2u
#define SIDE_BEAT 3u /* the sender is alive; its payload, if any, its wait-state records */
#define SIDE_DOWN                                                                                  \
    4u /* a link is out of use: its lane and the frames taken on it (8 bytes), then                \
          why (text, SIDE_DOWN_WHY_MAX bytes at most) */
#define SIDE_DOWN_WHY_MAX 160u
#define SIDE_REJOIN 5u   /* a dead link's fresh QP: its lane, then its rdma_qp_info */
#define SIDE_REJOINED 6u /* that QP is at RTS: its lane (4 bytes) */

#endif
