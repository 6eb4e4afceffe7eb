/* tests/mpi/test_outside.c - outside an MPI launcher the mpi backend loads nothing: "any" forms a
 * group of one without the plugin (or MPI) in the process, a strict "mpi" says why, and
 * tether_is_available("mpi") is 0. The plugin files come from the build (TETHER_TEST_PLUGINS,
 * colon-separated); RTLD_NOLOAD asks the loader whether each is in the process, and a last test
 * loads one on purpose to show that the question can answer yes. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tether.h"

static const char *const launcher_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK",
                                            "PMIX_RANK", "MPI_LOCALNRANKS"};

/* Whether any plugin file of the build is loaded in this process now. */
static int plugin_loaded(void)
{
    char list[4096];
    snprintf(list, sizeof list, "%s", getenv("TETHER_TEST_PLUGINS"));
    for (char *save = NULL, *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
        void *h = dlopen(p, RTLD_NOW | RTLD_NOLOAD);
        if (h) {
            dlclose(h);
            return 1;
        }
    }
    return 0;
}

static int setup(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof launcher_vars / sizeof launcher_vars[0]; i++)
        unsetenv(launcher_vars[i]);
    unsetenv("TETHER_BACKEND");
    assert_non_null(getenv("TETHER_TEST_PLUGINS"));
    return 0;
}

static void any_loads_no_plugin(void **state)
{
    (void)state;
    tether_group *g = NULL;
    assert_int_equal(tether_init("any", 0, &g), TETHER_OK);
    assert_int_equal(tether_group_size(g), 1);
    assert_string_equal(tether_group_backend(g), "singleton");
    tether_group_free(g);
    assert_false(plugin_loaded());
}

static void strict_mpi_says_why(void **state)
{
    (void)state;
    tether_group *g = NULL;
    assert_int_equal(tether_init("mpi", 1, &g), TETHER_EUNAVAIL);
    assert_null(g);
    assert_non_null(strstr(tether_last_error(), "not started by an MPI launcher"));
    assert_int_equal(tether_is_available("mpi"), 0);
    setenv("TETHER_BACKEND", "mpi", 1); /* "any" as TETHER_BACKEND names it: the same answer */
    assert_int_equal(tether_init("any", 1, &g), TETHER_EUNAVAIL);
    unsetenv("TETHER_BACKEND");
    assert_false(plugin_loaded());
}

/* The check above can fail: a plugin that is loaded is seen. */
static void loaded_plugin_is_seen(void **state)
{
    (void)state;
    char first[4096];
    snprintf(first, sizeof first, "%s", getenv("TETHER_TEST_PLUGINS"));
    first[strcspn(first, ":")] = '\0';
    void *h = dlopen(first, RTLD_NOW | RTLD_GLOBAL);
    assert_non_null(h);
    assert_true(plugin_loaded());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(any_loads_no_plugin),
        cmocka_unit_test(strict_mpi_says_why),
        cmocka_unit_test(loaded_plugin_is_seen),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
