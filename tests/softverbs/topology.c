/* topology.c - the emulated devices: SOFTVERBS_* settings, device list, contexts, device/port/GID
 * queries.
 *
 * SOFTVERBS_DEVICES="rdma_en2:10.0.2.1,rdma_en3" lists the devices. A device with an IPv4 address
 * has its IPv4-mapped GID (::ffff:a.b.c.d) at index SOFTVERBS_GID_INDEX (default 1) and a
 * link-local GID at index 0 (1 when the IPv4 one takes 0); without an address it has only the
 * link-local GID, which is what macOS shows before the paired interface gets an address. "%r" in an
 * address becomes this process's rank (SOFTVERBS_RANK, else TETHER_RANK, else 0), so ranks sharing
 * one environment still get different GIDs. SOFTVERBS_PROFILE=apple|linux picks the limits
 * (sv_profile).
 */
#include "softverbs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t softverbs__lock = PTHREAD_MUTEX_INITIALIZER;
sv_env softverbs__env;

static sv_device devices[SV_MAX_DEVICES];
static int ndevices;
static int env_state; /* 0 not read, 1 read, else the errno that reading it failed with */
static int open_contexts, ever_opened;
static unsigned long long tx_frames, tx_bytes, tx_writes, tx_write_bytes; /* WRITEs: of those */

/* TN3205 (UC only, ~10 QPs, ~100 MRs, page-aligned buffers); values it leaves open are set to the
 * strictest that a correct backend can still live with (1 SGE, no inline data). */
static const sv_profile profile_apple = {
    .name = "apple",
    .max_qp = 10,
    .max_mr = 100,
    .max_cq = 64,
    .max_cqe = 4096,
    .max_qp_wr = 1024,
    .max_sge = 1,
    .max_inline = 0,
    .max_msg = 1u << 30,
    .page_aligned_mr = 1,
    .uc_rdma = 0,
    .mtu = IBV_MTU_1024,
};
static const sv_profile profile_linux = {
    .name = "linux",
    .max_qp = 1024,
    .max_mr = 4096,
    .max_cq = 1024,
    .max_cqe = 65536,
    .max_qp_wr = 8192,
    .max_sge = SV_MAX_SGE,
    .max_inline = 256,
    .max_msg = 1u << 30,
    .page_aligned_mr = 0,
    .uc_rdma = 1,
    .mtu = IBV_MTU_4096,
};
/* An InfiniBand HCA: the linux limits, LIDs, and no IPv4-mapped GID (rdma_cm maps addresses) */
static sv_profile profile_ib(void)
{
    sv_profile p = profile_linux;
    p.name = "ib";
    p.ib = 1;
    return p;
}

uint64_t softverbs__now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void softverbs_vsay(const char *who, int err, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    if (err)
        fprintf(stderr, "%s[%d]: %s (%s)\n", who, (int)getpid(), line, strerror(err));
    else
        fprintf(stderr, "%s[%d]: %s\n", who, (int)getpid(), line);
}

void softverbs__note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    softverbs_vsay("softverbs", 0, fmt, ap);
    va_end(ap);
}

/* A verbs call fails: errno and the return value carry err; SOFTVERBS_DEBUG=1 also says why. */
int softverbs__fail(int err, const char *fmt, ...)
{
    if (softverbs__env.debug) {
        va_list ap;
        va_start(ap, fmt);
        softverbs_vsay("softverbs", err, fmt, ap);
        va_end(ap);
    }
    errno = err;
    return err;
}

void softverbs__count_tx(size_t bytes, int write)
{
    tx_frames++;
    tx_bytes += bytes;
    tx_writes += (unsigned long long)write;
    tx_write_bytes += write ? bytes : 0;
}

/* Integer setting in [min, max], def when unset; EINVAL naming the variable when malformed. */
int softverbs__env_long(const char *name, long def, long min, long max, long *out)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v) {
        *out = def;
        return 0;
    }
    errno = 0;
    *out = strtol(v, &end, 10);
    if (errno || *end || *out < min || *out > max) {
        softverbs__note("%s=\"%s\": expected an integer in [%ld, %ld]", name, v, min, max);
        return EINVAL;
    }
    return 0;
}

static int load_profile(sv_profile *p)
{
    const char *v = getenv("SOFTVERBS_PROFILE");
    long max_qp, max_mr;
    if (!v || !*v || !strcmp(v, "linux"))
        *p = profile_linux;
    else if (!strcmp(v, "apple"))
        *p = profile_apple;
    else if (!strcmp(v, "ib"))
        *p = profile_ib();
    else {
        softverbs__note("SOFTVERBS_PROFILE=\"%s\": expected apple, linux or ib", v);
        return EINVAL;
    }
    /* Lower limits on demand, so a test can reach "too many QPs/MRs" with few ranks. */
    if (softverbs__env_long("SOFTVERBS_MAX_QP", p->max_qp, 1, p->max_qp, &max_qp) ||
        softverbs__env_long("SOFTVERBS_MAX_MR", p->max_mr, 1, p->max_mr, &max_mr))
        return EINVAL;
    p->max_qp = (int)max_qp;
    p->max_mr = (int)max_mr;
    return 0;
}

/* This process's rank as text: SOFTVERBS_RANK, else TETHER_RANK, else "0". */
static const char *rank_text(void)
{
    const char *r = getenv("SOFTVERBS_RANK");
    if (!r || !*r)
        r = getenv("TETHER_RANK");
    return r && *r ? r : "0";
}

long softverbs__rank(void)
{
    return strtol(rank_text(), NULL, 10);
}

sv_device *softverbs__device_list(int *n)
{
    *n = ndevices;
    return devices;
}

/* "10.0.%r.1" -> "10.0.3.1" for rank 3. */
static int expand_rank(const char *in, size_t len, char *out, size_t out_len)
{
    const char *r = rank_text();
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        const char *piece = (in[i] == '%' && i + 1 < len && in[i + 1] == 'r') ? r : NULL;
        size_t n = piece ? strlen(piece) : 1;
        if (o + n >= out_len)
            return -1;
        memcpy(out + o, piece ? piece : &in[i], n);
        o += n;
        i += piece ? 1 : 0;
    }
    out[o] = '\0';
    return 0;
}

static void set_link_local(sv_device *d, int index)
{
    uint8_t *g = d->gid[index].raw;
    g[0] = 0xfe;
    g[1] = 0x80;
    g[8] = 0x02;
    g[11] = 0xff;
    g[12] = 0xfe;
    g[15] = (uint8_t)(d->index + 1);
}

/* One SOFTVERBS_DEVICES entry, "name" or "name:ipv4". */
static int parse_device(const char *entry, size_t len, long gid_index, sv_device *d)
{
    const char *colon = memchr(entry, ':', len);
    size_t name_len = colon ? (size_t)(colon - entry) : len;
    char addr[64];
    struct in_addr ip;
    if (name_len == 0 || name_len >= sizeof d->dev.name) {
        softverbs__note("SOFTVERBS_DEVICES: entry \"%.*s\": device name empty or longer than %zu",
                        (int)len, entry, sizeof d->dev.name - 1);
        return EINVAL;
    }
    memcpy(d->dev.name, entry, name_len);
    snprintf(d->dev.dev_name, sizeof d->dev.dev_name, "uverbs%d", d->index);
    d->dev.node_type = IBV_NODE_CA;
    d->dev.transport_type = IBV_TRANSPORT_IB;
    set_link_local(d, gid_index == 0 ? 1 : 0);
    if (!colon)
        return 0;
    if (expand_rank(colon + 1, len - name_len - 1, addr, sizeof addr) ||
        inet_pton(AF_INET, addr, &ip) != 1) {
        softverbs__note("SOFTVERBS_DEVICES: entry \"%.*s\": \"%s\" is not an IPv4 address",
                        (int)len, entry, addr);
        return EINVAL;
    }
    d->ip = ip;
    d->has_ip = 1;
    if (softverbs__env.prof.ib)
        return 0; /* IPoIB's address: no GID from it */
    d->gid[gid_index].raw[10] = 0xff;
    d->gid[gid_index].raw[11] = 0xff;
    memcpy(&d->gid[gid_index].raw[12], &ip, 4);
    return 0;
}

uint16_t softverbs__lid(const sv_device *d)
{
    return softverbs__env.prof.ib ? (uint16_t)(d->index + 1) : 0;
}

SV_EXPORT int softverbs_device_address(struct ibv_device *dev, struct in_addr *ip)
{
    const sv_device *d = (const sv_device *)dev;
    if (!d->has_ip)
        return ENOENT;
    *ip = d->ip;
    return 0;
}

static int load_devices(void)
{
    const char *list = getenv("SOFTVERBS_DEVICES");
    long gid_index;
    if (softverbs__env_long("SOFTVERBS_GID_INDEX", 1, 0, SV_GID_TBL_LEN - 1, &gid_index))
        return EINVAL;
    ndevices = 0;
    while (list && *list) {
        size_t len = strcspn(list, ",");
        if (ndevices == SV_MAX_DEVICES) {
            softverbs__note("SOFTVERBS_DEVICES: more than %d devices", SV_MAX_DEVICES);
            return EINVAL;
        }
        devices[ndevices].index = ndevices;
        if (parse_device(list, len, gid_index, &devices[ndevices]))
            return EINVAL;
        ndevices++;
        list += len + (list[len] == ',');
    }
    return 0;
}

static int load_env(void)
{
    sv_env *e = &softverbs__env;
    const char *dir = getenv("SOFTVERBS_DIR");
    long debug;
    if (env_state)
        return env_state == 1 ? 0 : env_state;
    env_state = EINVAL;
    if (softverbs__env_long("SOFTVERBS_DEBUG", 0, 0, 1, &debug) || load_profile(&e->prof) ||
        softverbs__env_long("SOFTVERBS_DELAY_US", 0, 0, 10000000, &e->delay_us) || load_devices() ||
        softverbs__fault_load())
        return env_state;
    e->debug = (int)debug;
    if (dir && *dir)
        snprintf(e->dir, sizeof e->dir, "%s", dir);
    else
        snprintf(e->dir, sizeof e->dir, "/tmp/softverbs-%d", (int)getuid());
    if (strlen(e->dir) > sizeof e->dir - 2) {
        softverbs__note("SOFTVERBS_DIR=\"%s\": longer than %zu characters", dir, sizeof e->dir - 2);
        return env_state;
    }
    env_state = 1;
    return 0;
}

/* SOFTVERBS_STATS=path: on exit, append what this process moved and the most QPs/MRs per device. */
__attribute__((destructor)) static void write_stats(void)
{
    const char *path = getenv("SOFTVERBS_STATS");
    FILE *f;
    if (!path || !*path || !ever_opened)
        return;
    f = fopen(path, "a");
    if (!f)
        return;
    fprintf(f, "pid=%d profile=%s messages=%llu bytes=%llu writes=%llu write_bytes=%llu",
            (int)getpid(), softverbs__env.prof.name, tx_frames, tx_bytes, tx_writes,
            tx_write_bytes);
    for (int i = 0; i < ndevices; i++)
        fprintf(f, " %s:qp=%d,mr=%d", devices[i].dev.name, devices[i].peak_qp, devices[i].peak_mr);
    fputc('\n', f);
    fclose(f);
}

SV_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
    struct ibv_device **list = NULL;
    int rc;
    pthread_mutex_lock(&softverbs__lock);
    rc = load_env();
    if (!rc) {
        list = calloc((size_t)ndevices + 1, sizeof *list);
        rc = list ? 0 : ENOMEM;
        for (int i = 0; list && i < ndevices; i++)
            list[i] = &devices[i].dev;
    }
    if (num_devices)
        *num_devices = list ? ndevices : 0;
    pthread_mutex_unlock(&softverbs__lock);
    errno = rc;
    return list;
}

SV_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

SV_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
    return device->name;
}

static sv_device *known_device(struct ibv_device *device)
{
    for (int i = 0; i < ndevices; i++)
        if (device == &devices[i].dev)
            return &devices[i];
    return NULL;
}

SV_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    sv_context *c = NULL;
    sv_device *d;
    int rc;
    pthread_mutex_lock(&softverbs__lock);
    d = env_state == 1 ? known_device(device) : NULL;
    if (!d)
        rc = softverbs__fail(EINVAL, "ibv_open_device: not a device from ibv_get_device_list");
    else if (!(c = calloc(1, sizeof *c)))
        rc = ENOMEM;
    else if (open_contexts == 0 && (rc = softverbs__service_start()) != 0) {
        free(c);
        c = NULL;
    } else {
        open_contexts++;
        ever_opened = 1;
        c->dev = d;
        c->ctx.device = device;
        c->ctx.cmd_fd = -1;
        c->ctx.async_fd = -1;
        c->ctx.num_comp_vectors = 1;
        c->ctx.ops.post_send = softverbs__post_send;
        c->ctx.ops.post_recv = softverbs__post_recv;
        c->ctx.ops.poll_cq = softverbs__poll_cq;
        c->ctx.ops.req_notify_cq = softverbs__req_notify_cq;
        pthread_mutex_init(&c->ctx.mutex, NULL);
    }
    pthread_mutex_unlock(&softverbs__lock);
    errno = c ? 0 : rc;
    return c ? &c->ctx : NULL;
}

/* Stricter than hardware, where closing frees everything: a context closed with live resources
 * fails with EBUSY and names them, so a backend that leaks on some path is caught in tests. */
SV_EXPORT int ibv_close_device(struct ibv_context *context)
{
    sv_context *c = (sv_context *)context;
    int rc = 0, stop = 0;
    pthread_mutex_lock(&softverbs__lock);
    if (c->npd || c->ncq || c->nchannel || c->nqp || c->nmr) {
        softverbs__note("ibv_close_device(%s): still open: %d QPs, %d MRs, %d CQs, %d PDs, "
                        "%d channels",
                        c->dev->dev.name, c->nqp, c->nmr, c->ncq, c->npd, c->nchannel);
        rc = EBUSY;
    } else {
        stop = --open_contexts == 0;
    }
    pthread_mutex_unlock(&softverbs__lock);
    if (rc)
        return softverbs__fail(rc, "ibv_close_device");
    if (stop)
        softverbs__service_stop();
    pthread_mutex_destroy(&c->ctx.mutex);
    free(c);
    return 0;
}

static sv_device *ctx_dev(struct ibv_context *context)
{
    return ((sv_context *)context)->dev;
}

SV_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *a)
{
    const sv_profile *p = &softverbs__env.prof;
    sv_device *d = ctx_dev(context);
    memset(a, 0, sizeof *a);
    snprintf(a->fw_ver, sizeof a->fw_ver, "softverbs-%s", p->name);
    a->node_guid = htobe64(0x0200000000000000ull | (uint64_t)(d->index + 1));
    a->sys_image_guid = a->node_guid;
    a->max_mr_size = 1ull << 40;
    a->page_size_cap = (uint64_t)sysconf(_SC_PAGESIZE);
    a->vendor_id = 0x5356; /* "SV" */
    a->max_qp = p->max_qp;
    a->max_qp_wr = p->max_qp_wr;
    a->max_sge = p->max_sge;
    a->max_cq = p->max_cq;
    a->max_cqe = p->max_cqe;
    a->max_mr = p->max_mr;
    a->max_pd = 64;
    a->max_qp_rd_atom = 0;
    a->max_pkeys = 1;
    a->phys_port_cnt = 1;
    return 0;
}

/* The header makes ibv_query_port a macro over an inline that falls back to this symbol when the
 * context is not an extended one (ours is not): fill only the fields that the compat layout has. */
SV_EXPORT int(ibv_query_port)(struct ibv_context *context, uint8_t port_num,
                              struct _compat_ibv_port_attr *port_attr)
{
    struct ibv_port_attr *a = (struct ibv_port_attr *)port_attr;
    if (port_num != 1)
        return softverbs__fail(EINVAL, "ibv_query_port(%s, port %u): the only port is 1",
                               ctx_dev(context)->dev.name, port_num);
    a->state = softverbs__fault_dev_down(ctx_dev(context), softverbs__now_us()) ? IBV_PORT_DOWN
                                                                                : IBV_PORT_ACTIVE;
    a->max_mtu = softverbs__env.prof.mtu;
    a->active_mtu = softverbs__env.prof.mtu;
    a->gid_tbl_len = SV_GID_TBL_LEN;
    a->max_msg_sz = softverbs__env.prof.max_msg;
    a->pkey_tbl_len = 1;
    a->lid = softverbs__lid(ctx_dev(context)); /* RoCE: 0, addressing is by GID */
    a->active_width = 1;
    a->active_speed = 32;
    a->phys_state = a->state == IBV_PORT_ACTIVE ? 5 : 3; /* LinkUp, Disabled */
    a->link_layer = softverbs__env.prof.ib ? IBV_LINK_LAYER_INFINIBAND : IBV_LINK_LAYER_ETHERNET;
    return 0;
}

SV_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
                            union ibv_gid *gid)
{
    sv_device *d = ctx_dev(context);
    if (port_num != 1 || index < 0 || index >= SV_GID_TBL_LEN) {
        softverbs__fail(EINVAL, "ibv_query_gid(%s, port %u, index %d): port 1, index < %d",
                        d->dev.name, port_num, index, SV_GID_TBL_LEN);
        return -1;
    }
    *gid = d->gid[index];
    return 0;
}

SV_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    static const char *const names[] = {
        [IBV_WC_SUCCESS] = "success",
        [IBV_WC_LOC_LEN_ERR] = "local length error",
        [IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
        [IBV_WC_LOC_PROT_ERR] = "local protection error",
        [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
        [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
        [IBV_WC_REM_ACCESS_ERR] = "remote access error",
        [IBV_WC_REM_OP_ERR] = "remote operation error",
        [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
        [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
        [IBV_WC_GENERAL_ERR] = "general error",
    };
    if ((unsigned)status < sizeof names / sizeof names[0] && names[status])
        return names[status];
    return "unknown";
}
