/* backends/rdma/verbs.c - dlopen of libibverbs into an entry-point table (NCCL's ibvsymbols). */
#include "verbs.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "core/config.h"
#include "core/params.h"

#define SYM(field, name) TETHER__DL_SYM(tether__ibv, field, name)
static const tether__dl_sym symbols[] = {
    SYM(get_device_list, "ibv_get_device_list"),
    SYM(free_device_list, "ibv_free_device_list"),
    SYM(get_device_name, "ibv_get_device_name"),
    SYM(open_device, "ibv_open_device"),
    SYM(close_device, "ibv_close_device"),
    SYM(query_device, "ibv_query_device"),
    SYM(query_port, "ibv_query_port"),
    SYM(query_gid, "ibv_query_gid"),
    SYM(alloc_pd, "ibv_alloc_pd"),
    SYM(dealloc_pd, "ibv_dealloc_pd"),
    SYM(reg_mr, "ibv_reg_mr"),
    SYM(dereg_mr, "ibv_dereg_mr"),
    SYM(create_comp_channel, "ibv_create_comp_channel"),
    SYM(destroy_comp_channel, "ibv_destroy_comp_channel"),
    SYM(create_cq, "ibv_create_cq"),
    SYM(destroy_cq, "ibv_destroy_cq"),
    SYM(get_cq_event, "ibv_get_cq_event"),
    SYM(ack_cq_events, "ibv_ack_cq_events"),
    SYM(create_qp, "ibv_create_qp"),
    SYM(modify_qp, "ibv_modify_qp"),
    SYM(destroy_qp, "ibv_destroy_qp"),
    SYM(wc_status_str, "ibv_wc_status_str"),
};

int tether__dl_table(const char *path, void **lib, void *table, const tether__dl_sym *syms,
                     size_t nsyms, const char *missing, const char *kind, char *why, size_t why_len)
{
    /* NODELETE: a library that keeps state (threads, provider caches) must survive our dlclose,
     * and its allocations stay reachable for leak checkers. */
    if (!(*lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))) {
        snprintf(why, why_len, "cannot load %s (%s); %s", path, dlerror(), missing);
        return -1;
    }
    for (size_t i = 0; i < nsyms; i++) {
        void *f = dlsym(*lib, syms[i].name);
        if (!f) {
            snprintf(why, why_len, "%s has no %s: not a %s library", path, syms[i].name, kind);
            dlclose(*lib);
            *lib = NULL;
            return -1;
        }
        /* POSIX guarantees a data pointer from dlsym converts to a function pointer. */
        memcpy((char *)table + syms[i].offset, &f, sizeof f);
    }
    return 0;
}

int tether__ibv_load(tether__ibv *v, char *why, size_t why_len)
{
    const char *path; /* the row's default when unset */
    tether__param_text(TETHER__P_IBVERBS_LIB, &path);
    memset(v, 0, sizeof *v);
    snprintf(v->path, sizeof v->path, "%s", path);
    char hint[128];
    snprintf(hint, sizeof hint,
             "RDMA needs libibverbs (Linux) or macOS 26.2+, %s names another file",
             TETHER__VAR(IBVERBS_LIB));
    return tether__dl_table(v->path, &v->lib, v, symbols, sizeof symbols / sizeof symbols[0], hint,
                            "verbs", why, why_len);
}

void tether__ibv_unload(tether__ibv *v)
{
    if (v->lib)
        dlclose(v->lib);
    v->lib = NULL;
}
