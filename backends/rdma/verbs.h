/* backends/rdma/verbs.h - libibverbs loaded at run time: one table of the entry points the backend
 * calls.
 *
 * The library is dlopened (TETHER_IBVERBS_LIB, else librdma.dylib on macOS, libibverbs.so.1
 * elsewhere), so tether links no verbs library and runs where RDMA is absent. The header's inline
 * verbs (ibv_post_send, ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq) go through the context's ops
 * table and need no symbol. Only the types of <infiniband/verbs.h> are used at build time. */
#ifndef TETHER_RDMA_VERBS_H
#define TETHER_RDMA_VERBS_H

#include <infiniband/verbs.h>
#include <stddef.h>

typedef struct tether__ibv {
    void *lib;
    char path[256];
    struct ibv_device **(*get_device_list)(int *num);
    void (*free_device_list)(struct ibv_device **list);
    const char *(*get_device_name)(struct ibv_device *dev);
    struct ibv_context *(*open_device)(struct ibv_device *dev);
    int (*close_device)(struct ibv_context *ctx);
    int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
    /* the exported compat symbol: it fills the leading fields of a zeroed ibv_port_attr */
    int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
    int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
    struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
    int (*dealloc_pd)(struct ibv_pd *pd);
    struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
    int (*dereg_mr)(struct ibv_mr *mr);
    struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
    int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
    struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_ctx,
                                struct ibv_comp_channel *ch, int vector);
    int (*destroy_cq)(struct ibv_cq *cq);
    int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_ctx);
    void (*ack_cq_events)(struct ibv_cq *cq, unsigned int n);
    struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
    int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
    int (*destroy_qp)(struct ibv_qp *qp);
    const char *(*wc_status_str)(enum ibv_wc_status status);
} tether__ibv;

/* Load the library and every entry point. 0, or -1 with why saying which file or symbol failed. */
int tether__ibv_load(tether__ibv *v, char *why, size_t why_len);

/* Where an entry point goes in a table, by name (verbs.c, rdmacm.c). */
typedef struct tether__dl_sym {
    size_t offset;
    const char *name;
} tether__dl_sym;
#define TETHER__DL_SYM(type, field, name)                                                          \
    {                                                                                              \
        offsetof(type, field), name                                                                \
    }

/* dlopen path into *lib and fill table with syms. 0, or -1 with why naming the file or the missing
 * symbol; missing says what the library is for (the message when it cannot be loaded), kind what
 * it should be (the message when a symbol is missing: "not a <kind> library"). */
int tether__dl_table(const char *path, void **lib, void *table, const tether__dl_sym *syms,
                     size_t nsyms, const char *missing, const char *kind, char *why,
                     size_t why_len);
void tether__ibv_unload(tether__ibv *v);

#endif
