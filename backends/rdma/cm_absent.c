/* backends/rdma/cm_absent.c - the rdma_cm entry points of a build made without <rdma/rdma_cma.h>
 * (macOS, whose RDMA has no connection manager; Linux without librdmacm-dev): links come from the
 * device matrix only. CMakeLists.txt compiles this file instead of cm.c and rdmacm.c. */

#include "cm.h"
#include "core/params.h"
#include "rdma.h"
#include "rdma_impl.h"

int tether__rdma_cm_open(const tether__config *cfg, rdma_ep *ep, int64_t deadline_ms)
{
    (void)cfg;
    (void)ep;
    (void)deadline_ms;
    return tether__fail(TETHER_ECONFIG,
                        "rdma: %s is unset, and this build "
                        "has no rdma_cm to find the devices from the hostfile's addresses (built "
                        "without rdma/rdma_cma.h: librdmacm-dev on Linux)",
                        TETHER__VARS(IBV_DEVICES));
}

int tether__rdma_cm_usable(char *why, size_t why_len)
{
    (void)why;
    (void)why_len;
    return 1; /* a matrix needs no connection manager */
}

void tether__rdma_cm_report(const tether__config *cfg, char *out, size_t len)
{
    (void)cfg;
    if (len)
        out[0] = '\0';
}

void tether__rdma_cm_close(rdma_ep *ep)
{
    (void)ep;
}
