/* backends/rdma/register.c - message buffers registered for a rendezvous (io.c): the sender's, read
 * by its RDMA WRITE, and the receiver's, written by it.
 *
 * No cache: a buffer is registered when its message's rendezvous begins and deregistered when the
 * message completes, so no registration outlives the library's hold on the buffer (a cache keyed by
 * address would have to prove the memory was not freed and mapped again in between). What this
 * costs is one ibv_reg_mr and one ibv_dereg_mr per message above TETHER_RDMA_WRITE_MIN on each
 * side. The bound follows from RV_MAX: a link has at most RV_MAX messages in rendezvous each way,
 * each holding one registration on each side, so at most 2 * RV_MAX per link are live. Calls
 * nothing else of the backend's (tests/layers: state.c calls it). */
#include <errno.h>
#include <unistd.h>

#include "rdma_impl.h"
#include "register.h"

int tether__rdma_reg(rdma_ep *ep, rdma_link *l, void *buf, size_t len, int access,
                     struct ibv_mr **mr)
{
    /* Whole pages: Apple's driver takes no other (the emulator's apple profile checks it), and
     * the pages are pinned whole anyway. */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo = (uintptr_t)buf / page * page;
    uintptr_t hi = ((uintptr_t)buf + len + page - 1) / page * page;
    if (!(*mr = ep->ibv.reg_mr(l->dev->pd, (void *)lo, hi - lo, access)))
        return errno ? errno : ENOMEM;
    if (++ep->mrs > ep->mrs_peak)
        ep->mrs_peak = ep->mrs;
    return 0;
}

void tether__rdma_dereg(rdma_ep *ep, struct ibv_mr **mr)
{
    if (!*mr)
        return;
    ep->ibv.dereg_mr(*mr); /* fails only for a bad handle: nothing left to do about it */
    *mr = NULL;
    ep->mrs--;
}

/* Forget rendezvous id of l, its registrations dropped and nothing owed for it, where its part
 * belongs to request r (NULL: whichever). */
static void forget(rdma_ep *ep, rdma_link *l, int id, const struct tether__req *r)
{
    if (l->rv_out[id] && (!r || l->rv_out[id]->req == r)) {
        tether__rdma_dereg(ep, &l->rv_out[id]->mr);
        l->rv_out[id] = NULL;
        l->go_due &= ~(1u << id);
    }
    if (l->rv_in[id] && (!r || l->rv_in[id]->req == r)) {
        tether__rdma_dereg(ep, &l->rv_in[id]->mr);
        l->rv_in[id] = NULL;
        l->cts_due &= ~(1u << id);
    }
}

/* Every link's rendezvous of r (NULL: all); the links by hand, not RDMA_EACH_LINK, so that this
 * file calls none of the backend's (state.c calls it). */
static void forget_all(rdma_ep *ep, const struct tether__req *r)
{
    for (int p = 0; p < ep->size; p++)
        for (int k = 0; k < ep->peers[p].nlinks; k++)
            for (int id = 0; id < RV_MAX; id++)
                forget(ep, &ep->peers[p].link[k], id, r);
}

void tether__rdma_rv_forget(rdma_ep *ep, struct tether__req *r)
{
    forget_all(ep, r);
}

void tether__rdma_rv_drop(rdma_ep *ep)
{
    forget_all(ep, NULL);
}
