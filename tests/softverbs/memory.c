/* memory.c - protection domains and memory regions: registration rules, per-device MR limit, key
 * checks. */
#include "softverbs.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static sv_mr *mrs;
static uint32_t next_key = 0x100;

#define SV_ACCESS_KNOWN                                                                            \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                   \
     IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING)

SV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    sv_pd *p = calloc(1, sizeof *p);
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_lock(&softverbs__lock);
    p->pd.context = context;
    ((sv_context *)context)->npd++;
    pthread_mutex_unlock(&softverbs__lock);
    return &p->pd;
}

SV_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
    sv_pd *p = (sv_pd *)pd;
    int busy;
    pthread_mutex_lock(&softverbs__lock);
    busy = p->nmr || p->nqp;
    if (!busy)
        ((sv_context *)pd->context)->npd--;
    pthread_mutex_unlock(&softverbs__lock);
    if (busy)
        return softverbs__fail(EBUSY, "ibv_dealloc_pd: %d MRs and %d QPs still use it", p->nmr,
                               p->nqp);
    free(p);
    return 0;
}

/* The checks hardware makes at registration; 0 or the errno. */
static int mr_allowed(sv_context *c, void *addr, size_t length, int access)
{
    const sv_profile *prof = &softverbs__env.prof;
    long page = sysconf(_SC_PAGESIZE);
    const char *dev = c->dev->dev.name;
    if (!addr || length == 0)
        return softverbs__fail(EINVAL, "ibv_reg_mr(%s): NULL address or zero length", dev);
    if (access & ~SV_ACCESS_KNOWN)
        return softverbs__fail(EINVAL, "ibv_reg_mr(%s): unknown access flags 0x%x", dev,
                               access & ~SV_ACCESS_KNOWN);
    /* Remote write or atomic access needs local write: the IB spec's rule, EINVAL in rdma-core. */
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE))
        return softverbs__fail(EINVAL, "ibv_reg_mr(%s): remote write without local write", dev);
    if (prof->page_aligned_mr && (uintptr_t)addr % (uintptr_t)page)
        return softverbs__fail(EINVAL,
                               "ibv_reg_mr(%s): %p is not page aligned (%ld), which the "
                               "apple profile requires",
                               dev, addr, page);
    if (c->dev->nmr >= prof->max_mr)
        return softverbs__fail(ENOMEM, "ibv_reg_mr(%s): the device's %d MRs are all in use", dev,
                               prof->max_mr);
    return 0;
}

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    sv_context *c = (sv_context *)pd->context;
    sv_mr *m = NULL;
    int rc;
    pthread_mutex_lock(&softverbs__lock);
    rc = mr_allowed(c, addr, length, access);
    if (!rc && !(m = calloc(1, sizeof *m)))
        rc = ENOMEM;
    if (!rc) {
        m->mr.context = pd->context;
        m->mr.pd = pd;
        m->mr.addr = addr;
        m->mr.length = length;
        /* Low byte varies like a hardware key's, so a stale key rarely matches a new MR. */
        m->mr.lkey = m->mr.rkey = (next_key++ << 8) | ((uint32_t)(uintptr_t)m >> 4 & 0xff);
        m->access = access;
        m->next = mrs;
        mrs = m;
        ((sv_pd *)pd)->nmr++;
        c->nmr++;
        if (++c->dev->nmr > c->dev->peak_mr)
            c->dev->peak_mr = c->dev->nmr;
    }
    pthread_mutex_unlock(&softverbs__lock);
    errno = rc;
    return m ? &m->mr : NULL;
}

/* The header wraps ibv_reg_mr in a macro (over this symbol or ibv_reg_mr_iova2): parenthesised
 * names keep it from expanding here. */
SV_EXPORT struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return reg_mr(pd, addr, length, access);
}

SV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                          uint64_t iova, unsigned int access)
{
    if (iova != (uintptr_t)addr) {
        softverbs__fail(EOPNOTSUPP, "ibv_reg_mr_iova2: an iova other than the address is not "
                                    "emulated");
        return NULL;
    }
    return reg_mr(pd, addr, length, (int)access);
}

SV_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
    sv_context *c = (sv_context *)mr->context;
    sv_mr **pp;
    int found;
    pthread_mutex_lock(&softverbs__lock);
    for (pp = &mrs; *pp && &(*pp)->mr != mr; pp = &(*pp)->next)
        ;
    found = *pp != NULL;
    if (found) {
        *pp = (*pp)->next;
        ((sv_pd *)mr->pd)->nmr--;
        c->nmr--;
        c->dev->nmr--;
    }
    pthread_mutex_unlock(&softverbs__lock);
    if (!found)
        return softverbs__fail(EINVAL, "ibv_dereg_mr: not a registered MR (deregistered twice?)");
    free((sv_mr *)mr);
    return 0;
}

int softverbs__mr_check(struct ibv_pd *pd, uint32_t key, int by_rkey, uint64_t addr, uint64_t len,
                        int access)
{
    for (sv_mr *m = mrs; m; m = m->next) {
        uint64_t start = (uintptr_t)m->mr.addr;
        if ((by_rkey ? m->mr.rkey : m->mr.lkey) != key)
            continue;
        if (m->mr.pd != pd || (m->access & access) != access)
            return -1;
        return addr >= start && len <= m->mr.length && addr - start <= m->mr.length - len ? 0 : -1;
    }
    return -1;
}
