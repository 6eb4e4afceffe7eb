/* backends/rdma/rdmacm.h - librdmacm loaded at run time: one table of the connection manager's
 * entry points the backend calls (cm.c).
 *
 * As libibverbs (verbs.h), the library is dlopened (TETHER_RDMACM_LIB, else librdmacm.so.1), so
 * tether links neither and runs where RDMA is absent. It must use the libibverbs the backend
 * loaded: the cm_id's verbs context is handed to that library's calls. Only the types of
 * <rdma/rdma_cma.h> are used at build time; builds without it (macOS) compile cm_absent.c. */
#ifndef TETHER_RDMA_RDMACM_H
#define TETHER_RDMA_RDMACM_H

#include <rdma/rdma_cma.h>
#include <stddef.h>

typedef struct tether__rdmacm {
    void *lib;
    char path[256];
    struct rdma_event_channel *(*create_event_channel)(void);
    void (*destroy_event_channel)(struct rdma_event_channel *ch);
    int (*create_id)(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *ctx,
                     enum rdma_port_space ps);
    int (*destroy_id)(struct rdma_cm_id *id);
    int (*bind_addr)(struct rdma_cm_id *id, struct sockaddr *addr);
    int (*listen)(struct rdma_cm_id *id, int backlog);
    int (*resolve_addr)(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
                        int timeout_ms);
    int (*resolve_route)(struct rdma_cm_id *id, int timeout_ms);
    int (*get_cm_event)(struct rdma_event_channel *ch, struct rdma_cm_event **event);
    int (*ack_cm_event)(struct rdma_cm_event *event);
    int (*create_qp)(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
    void (*destroy_qp)(struct rdma_cm_id *id);
    int (*connect)(struct rdma_cm_id *id, struct rdma_conn_param *param);
    int (*accept)(struct rdma_cm_id *id, struct rdma_conn_param *param);
    int (*reject)(struct rdma_cm_id *id, const void *private_data, uint8_t len);
    int (*disconnect)(struct rdma_cm_id *id);
    __be16 (*get_src_port)(struct rdma_cm_id *id);
    const char *(*event_str)(enum rdma_cm_event_type event);
} tether__rdmacm;

/* Load the library and every entry point. 0, or -1 with why saying which file or symbol failed. */
int tether__rdmacm_load(tether__rdmacm *cm, char *why, size_t why_len);
void tether__rdmacm_unload(tether__rdmacm *cm);

#endif
