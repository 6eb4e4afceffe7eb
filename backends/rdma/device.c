/* backends/rdma/device.c - one RDMA device: open, port and GID checks, its PD, CQ, channel and slot
 * pool. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "device.h"
#include "rdma_impl.h"

static const char *port_state_text(enum ibv_port_state s)
{
    return s == IBV_PORT_DOWN    ? "DOWN"
           : s == IBV_PORT_INIT  ? "INIT"
           : s == IBV_PORT_ARMED ? "ARMED"
                                 : "not active";
}

static int is_ipv4_mapped(const union ibv_gid *g)
{
    static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return !memcmp(g->raw, prefix, sizeof prefix);
}

/* The GID to use is the IPv4-mapped one of the paired interface (rdma_en5 <-> en5): scan for it,
 * never assume an index (a fixed index is what breaks RTR on other machines). */
static int find_gid(rdma_ep *ep, rdma_dev *d, int table_len)
{
    for (int i = 0; i < table_len; i++) {
        union ibv_gid g;
        if (ep->ibv.query_gid(d->ctx, 1, i, &g) == 0 && is_ipv4_mapped(&g)) {
            d->gid_index = i;
            d->gid = g;
            return TETHER_OK;
        }
    }
    return tether__fail(TETHER_ECONFIG,
                        "rdma: device %s has no IPv4-mapped GID among its %d GID "
                        "entries, so peers cannot address it: give its interface an IPv4 address "
                        "(macOS: rdma_en5 pairs with en5, `sudo ifconfig en5 inet 10.0.5.1/30`; "
                        "Linux: `sudo ip addr add 10.0.5.1/30 dev <netdev>`), then check with "
                        "`ibv_devinfo -v`",
                        d->name, table_len);
}

static int check_port(rdma_ep *ep, rdma_dev *d)
{
    struct ibv_port_attr pa;
    struct ibv_device_attr da;
    int rc;
    memset(&pa, 0, sizeof pa);
    if ((rc = ep->ibv.query_port(d->ctx, 1, &pa)) != 0)
        return tether__fail(TETHER_ENET, "rdma: ibv_query_port(%s, 1) failed: %s", d->name,
                            strerror(rc));
    if (pa.state != IBV_PORT_ACTIVE)
        return tether__fail(TETHER_ENET,
                            "rdma: port 1 of %s is %s: is the cable plugged in and the "
                            "peer up? (`ibv_devinfo` shows the port state)",
                            d->name, port_state_text(pa.state));
    memset(&da, 0, sizeof da);
    if ((rc = ep->ibv.query_device(d->ctx, &da)) != 0)
        return tether__fail(TETHER_ENET, "rdma: ibv_query_device(%s) failed: %s", d->name,
                            strerror(rc));
    d->mtu = pa.active_mtu;
    d->max_qp = da.max_qp;
    /* Through rdma_cm the connection manager addresses the peer (GID or LID) */
    return d->borrowed ? TETHER_OK : find_gid(ep, d, pa.gid_tbl_len);
}

/* The port checks, PD and completion channel of the device whose context d->ctx is. */
static int setup(rdma_ep *ep, rdma_dev *d)
{
    int flags;
    TRY(check_port(ep, d));
    if (!(d->pd = ep->ibv.alloc_pd(d->ctx)))
        return tether__fail(TETHER_ENET, "rdma: ibv_alloc_pd(%s) failed: %s", d->name,
                            strerror(errno));
    if (!(d->ch = ep->ibv.create_comp_channel(d->ctx)))
        return tether__fail(TETHER_ENET, "rdma: ibv_create_comp_channel(%s) failed: %s", d->name,
                            strerror(errno));
    /* wait() polls the channel and drains its events without blocking */
    if ((flags = fcntl(d->ch->fd, F_GETFL)) < 0 ||
        fcntl(d->ch->fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return tether__fail(TETHER_ENET, "rdma: fcntl(O_NONBLOCK) on the channel of %s: %s",
                            d->name, strerror(errno));
    return TETHER_OK;
}

int tether__rdma_dev_open(rdma_ep *ep, rdma_dev *d, struct ibv_device *dev)
{
    snprintf(d->name, sizeof d->name, "%s", ep->ibv.get_device_name(dev));
    if (!(d->ctx = ep->ibv.open_device(dev)))
        return tether__fail(TETHER_ENET, "rdma: ibv_open_device(%s) failed: %s", d->name,
                            strerror(errno));
    return setup(ep, d);
}

int tether__rdma_dev_adopt(rdma_ep *ep, rdma_dev *d, struct ibv_context *ctx)
{
    snprintf(d->name, sizeof d->name, "%s", ep->ibv.get_device_name(ctx->device));
    d->ctx = ctx;
    d->borrowed = 1;
    return setup(ep, d);
}

/* One page-aligned pool per device, registered once (drivers allow about 100 MRs per device),
 * and one CQ big enough for every receive and send of its links: a CQ overrun breaks the CQ. */
int tether__rdma_dev_pool(rdma_ep *ep, rdma_dev *d)
{
    int cqe = d->nlinks * LINK_SLOTS + 16;
    d->pool_len = (size_t)d->nlinks * LINK_SLOTS * SLOT_SIZE;
    d->pool = mmap(NULL, d->pool_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (d->pool == MAP_FAILED) {
        d->pool = NULL;
        return tether__fail(TETHER_ENOMEM, "rdma: no memory for the %zu-byte slot pool of %s",
                            d->pool_len, d->name);
    }
    if (!(d->mr = ep->ibv.reg_mr(d->pd, d->pool, d->pool_len, IBV_ACCESS_LOCAL_WRITE)))
        return tether__fail(TETHER_ENET, "rdma: ibv_reg_mr(%s, %zu bytes) failed: %s%s", d->name,
                            d->pool_len, strerror(errno),
                            errno == ENOMEM ? " (the device's memory registrations are used up, "
                                              "or the locked-memory limit, `ulimit -l`, is low)"
                                            : "");
    if (!(d->cq = ep->ibv.create_cq(d->ctx, cqe, d, d->ch, 0)))
        return tether__fail(TETHER_ENET, "rdma: ibv_create_cq(%s, %d entries) failed: %s", d->name,
                            cqe, strerror(errno));
    return TETHER_OK;
}

unsigned char *tether__rdma_slot(const rdma_link *l, int slot)
{
    return l->dev->pool + (size_t)(l->first_slot + slot) * SLOT_SIZE;
}

void tether__rdma_dev_events(rdma_ep *ep, rdma_dev *d)
{
    struct ibv_cq *cq;
    void *ctx;
    while (ep->ibv.get_cq_event(d->ch, &cq, &ctx) == 0)
        ep->ibv.ack_cq_events(cq, 1);
}

/* Log, not fail: close keeps going so every resource is released. */
static void check_close(int rc, const char *call, const char *dev)
{
    if (rc)
        TLOG_WARN("rdma: %s(%s) failed while closing: %s", call, dev, strerror(rc));
}

void tether__rdma_dev_close(rdma_ep *ep, rdma_dev *d)
{
    if (d->ch)
        tether__rdma_dev_events(ep, d); /* a CQ with events taken but not acked cannot go */
    if (d->cq)
        check_close(ep->ibv.destroy_cq(d->cq), "ibv_destroy_cq", d->name);
    if (d->mr)
        check_close(ep->ibv.dereg_mr(d->mr), "ibv_dereg_mr", d->name);
    if (d->pool)
        munmap(d->pool, d->pool_len);
    if (d->ch)
        check_close(ep->ibv.destroy_comp_channel(d->ch), "ibv_destroy_comp_channel", d->name);
    if (d->pd)
        check_close(ep->ibv.dealloc_pd(d->pd), "ibv_dealloc_pd", d->name);
    if (d->ctx && !d->borrowed)
        check_close(ep->ibv.close_device(d->ctx), "ibv_close_device", d->name);
    memset(d, 0, sizeof *d);
}
