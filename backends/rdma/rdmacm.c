/* backends/rdma/rdmacm.c - dlopen of librdmacm into an entry-point table (as verbs.c). */
#include "rdmacm.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "core/config.h"
#include "core/params.h"
#include "verbs.h"

#define SYM(field, name) TETHER__DL_SYM(tether__rdmacm, field, name)
static const tether__dl_sym symbols[] = {
    SYM(create_event_channel, "rdma_create_event_channel"),
    SYM(destroy_event_channel, "rdma_destroy_event_channel"),
    SYM(create_id, "rdma_create_id"),
    SYM(destroy_id, "rdma_destroy_id"),
    SYM(bind_addr, "rdma_bind_addr"),
    SYM(listen, "rdma_listen"),
    SYM(resolve_addr, "rdma_resolve_addr"),
    SYM(resolve_route, "rdma_resolve_route"),
    SYM(get_cm_event, "rdma_get_cm_event"),
    SYM(ack_cm_event, "rdma_ack_cm_event"),
    SYM(create_qp, "rdma_create_qp"),
    SYM(destroy_qp, "rdma_destroy_qp"),
    SYM(connect, "rdma_connect"),
    SYM(accept, "rdma_accept"),
    SYM(reject, "rdma_reject"),
    SYM(disconnect, "rdma_disconnect"),
    SYM(get_src_port, "rdma_get_src_port"),
    SYM(event_str, "rdma_event_str"),
};

int tether__rdmacm_load(tether__rdmacm *cm, char *why, size_t why_len)
{
    const char *path; /* the row's default when unset */
    tether__param_text(TETHER__P_RDMACM_LIB, &path);
    memset(cm, 0, sizeof *cm);
    snprintf(cm->path, sizeof cm->path, "%s", path);
    char hint[256];
    snprintf(hint, sizeof hint,
             "without a device matrix (%s) RDMA connects through librdmacm (rdma-core's "
             "librdmacm1), %s names another file",
             TETHER__VAR(IBV_DEVICES), TETHER__VAR(RDMACM_LIB));
    return tether__dl_table(cm->path, &cm->lib, cm, symbols, sizeof symbols / sizeof symbols[0],
                            hint, "connection manager", why, why_len);
}

void tether__rdmacm_unload(tether__rdmacm *cm)
{
    if (cm->lib)
        dlclose(cm->lib);
    cm->lib = NULL;
}
