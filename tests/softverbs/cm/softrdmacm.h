/* softrdmacm.h - the connection manager emulator's model (libsoftrdmacm.so, beside the verbs
 * emulator, whose libibverbs names it calls): ids, event channels, and the handshake on the wire.
 *
 * An address has an RDMA device when a device of SOFTVERBS_DEVICES has it (RoCE v2: its GID comes
 * from the address; the ib profile: IPoIB's address, the port addressed by LID). Port spaces are
 * real TCP ports on that address: a listener is a TCP socket, and a connection's REQ, REP, RTU, REJ
 * and DREQ messages cross a TCP connection between the processes, as the CM's MADs cross the
 * fabric. No thread: an event channel's fd is an epoll set of its ids' sockets plus an eventfd that
 * is readable while events wait, and rdma_get_cm_event moves the handshake on. Used from one thread
 * at a time, as the backend does. Exported names are librdmacm's; shared internals are
 * softrdmacm__*, the rest static. */
#ifndef SOFTRDMACM_H
#define SOFTRDMACM_H

#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>

#define CM_EXPORT __attribute__((visibility("default")))
#define CM_PDATA_MAX 56      /* RC private data of a REQ, as in the IB CM */
#define CM_REJ_NO_LISTENER 8 /* IB_CM_REJ_INVALID_SERVICE_ID */
#define CM_REJ_CONSUMER 28   /* IB_CM_REJ_CONSUMER_DEFINED: the application rejected */

enum { CM_REQ = 1, CM_REP, CM_RTU, CM_REJ, CM_DREQ };
#define CM_MAGIC 0x53434d31u /* "SCM1" */

/* One handshake message; same machine, so host byte order. */
typedef struct cm_msg {
    uint32_t magic, kind;
    uint32_t qpn, psn, status;
    union ibv_gid gid; /* the sender's port GID */
    uint32_t mtu;
    uint16_t lid; /* the sender's port LID (InfiniBand; 0 on RoCE) */
    uint8_t qp_type, retry, rnr_retry, depth;
    uint8_t pdata_len;
    uint8_t pdata[CM_PDATA_MAX];
} cm_msg;

enum {
    ID_IDLE,
    ID_BOUND,
    ID_ADDR,  /* address resolved */
    ID_ROUTE, /* route resolved */
    ID_LISTEN,
    ID_REQ_WAIT,   /* a child reading its REQ */
    ID_REQ_RCVD,   /* CONNECT_REQUEST given: must be accepted or rejected */
    ID_CONNECTING, /* REQ sent, waiting for REP */
    ID_ACCEPTED,   /* REP sent, waiting for RTU */
    ID_ESTABLISHED,
    ID_DONE, /* rejected, disconnected or failed */
};

typedef struct sv_cm_channel sv_cm_channel;

typedef struct sv_cm_id {
    struct rdma_cm_id id; /* first: what callers hold */
    int state;
    int fd; /* listener or connection socket; -1 */
    struct ibv_sa_path_rec path;
    int sgid_index; /* of path.sgid in the device's table */
    cm_msg in;      /* message being read */
    size_t in_got;
    cm_msg peer;               /* the peer's REQ or REP */
    uint32_t psn;              /* our starting PSN */
    uint8_t retry, rnr_retry;  /* an active side's, from rdma_connect: they go in its REQ */
    int given, acked;          /* events handed out and acked */
    struct sv_cm_id *listener; /* a child's */
    struct sv_cm_id *next;     /* in its channel */
} sv_cm_id;

typedef struct sv_cm_event {
    struct rdma_cm_event ev; /* first */
    uint8_t pdata[CM_PDATA_MAX];
    struct sv_cm_event *next;
} sv_cm_event;

struct sv_cm_channel {
    struct rdma_event_channel ch; /* first; ch.fd is the epoll set */
    int wake;                     /* eventfd: readable while events wait */
    sv_cm_event *head, *tail;
    sv_cm_id *ids;
};

/* events.c */
void softrdmacm__note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int softrdmacm__fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void softrdmacm__event(sv_cm_id *id, enum rdma_cm_event_type type, int status, const cm_msg *m);
int softrdmacm__watch(sv_cm_id *id, int fd);
void softrdmacm__unwatch(sv_cm_id *id);
/* the context of the device whose address is a, and the index of its GID (RoCE: the one made from
 * the address; InfiniBand: 0, the port's own); NULL if none */
struct ibv_context *softrdmacm__device(const struct sockaddr_in *a, int *gid_index);
long softrdmacm__rank(void);

/* connect.c: a whole message m arrived on id's socket (NULL: the socket ended) */
void softrdmacm__on_msg(sv_cm_id *id, const cm_msg *m);
int softrdmacm__send(sv_cm_id *id, int kind, uint32_t status, const void *pdata, uint8_t len);
void softrdmacm__accept_fd(sv_cm_id *listener);

#endif
