/* backends/rdma/absent.c - the rdma entry of a build made without <infiniband/verbs.h>: the backend
 * is known by name (so "rdma" is an error that says why, not an unknown backend) but never usable.
 * CMakeLists.txt compiles this file instead of the rest of backends/rdma/ when TETHER_RDMA is off.
 */
#include <stdio.h>

#include "rdma.h"

static int absent(char *why, size_t why_len)
{
    snprintf(why, why_len,
             "this build has no RDMA: built without infiniband/verbs.h; the macOS 26.2 "
             "SDK has it (libibverbs-dev on Linux)");
    return 0;
}

/* Configured as the real backend is (a device matrix), so that a job set up for RDMA fails as
 * unable to run here, saying why, rather than quietly running alone. */
static int absent_configured(const tether__config *cfg, char *why, size_t why_len)
{
    if (cfg->ibv_devices)
        return 1;
    absent(why, why_len);
    return 0;
}

void tether__rdma_cm_report(const tether__config *cfg, char *out, size_t len)
{
    (void)cfg;
    if (len)
        out[0] = '\0';
}

const tether__transport_ops tether__rdma_ops = {
    .name = "rdma",
    .configured = absent_configured,
    .usable = absent,
};
