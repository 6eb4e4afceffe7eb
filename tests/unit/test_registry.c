/* tests/unit/test_registry.c - what tether_is_available and tether_init say about a backend that
 * cannot run: in a build without <infiniband/verbs.h> (TETHER_RDMA=OFF, macOS before the 26.2 SDK)
 * "rdma" is known but never available, and the reason names the build; with RDMA built, the reason
 * is what this machine lacks (the verbs library, a device, or TETHER_IBV_DEVICES). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tether.h"

#define NO_RDMA_REASON                                                                             \
    "this build has no RDMA: built without infiniband/verbs.h; the macOS 26.2 SDK has it"

static void rdma_unavailable_says_why(void **state)
{
    (void)state;
    unsetenv("TETHER_IBV_DEVICES");
    unsetenv("MLX_IBV_DEVICES");
    assert_int_equal(tether_is_available("rdma"), 0);
    assert_non_null(strstr(tether_last_error(), "backend \"rdma\" is not available: "));
#if !TETHER_HAVE_RDMA
    assert_non_null(strstr(tether_last_error(), NO_RDMA_REASON));
#endif
}

static void rdma_init_refused_with_reason(void **state)
{
    tether_group *g = NULL;
    (void)state;
    unsetenv("TETHER_IBV_DEVICES");
    int rc = tether_init("rdma", 1, &g);
    assert_int_equal(rc, TETHER_EUNAVAIL);
    assert_null(g);
#if !TETHER_HAVE_RDMA
    assert_non_null(strstr(tether_last_error(), NO_RDMA_REASON));
    /* set up for RDMA (a device matrix): refused even when not strict, with the reason */
    setenv("TETHER_IBV_DEVICES", "/nonexistent/devices.json", 1);
    assert_int_equal(tether_init("rdma", 0, &g), TETHER_EUNAVAIL);
    assert_null(g);
    assert_non_null(strstr(tether_last_error(), NO_RDMA_REASON));
    unsetenv("TETHER_IBV_DEVICES");
#endif
}

static void singleton_always_available(void **state)
{
    (void)state;
    assert_int_equal(tether_is_available("singleton"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rdma_unavailable_says_why),
        cmocka_unit_test(rdma_init_refused_with_reason),
        cmocka_unit_test(singleton_always_available),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
