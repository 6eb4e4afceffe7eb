/* tests/unit/test_config.c - reading TETHER_* variables: fallbacks, defaults, malformed values, the
 * interface filter, and docs/env.md naming every variable of the table. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/config.h"
#include "core/errors.h"
#include "core/registry.h"
#include "tether.h"

static const char *const vars[] = {"TETHER_RANK",
                                   "TETHER_HEARTBEAT",
                                   "MLX_RANK",
                                   "RANK",
                                   "TETHER_SIZE",
                                   "WORLD_SIZE",
                                   "TETHER_HOSTFILE",
                                   "MLX_HOSTFILE",
                                   "TETHER_COORDINATOR",
                                   "MLX_JACCL_COORDINATOR",
                                   "MASTER_ADDR",
                                   "MASTER_PORT",
                                   "TETHER_TIMEOUT",
                                   "TETHER_DEADLOCK",
                                   "TETHER_SPIN_US",
                                   "TETHER_IFACE_PRIORITY",
                                   "TETHER_WIRE_DTYPE",
                                   "TETHER_JOB_TOKEN",
                                   "TETHER_BACKEND",
                                   "TETHER_ALLREDUCE_ALGO",
                                   "TETHER_TREE_BELOW",
                                   "MLX_WORLD_SIZE",
                                   "MLX_IBV_DEVICES",
                                   "MCCL_IFACE_PRIORITY",
                                   "MCCL_WIRE_DTYPE",
                                   "MCCL_ALLREDUCE_ALGO",
                                   "LOCAL_RANK",
                                   "TETHER_IBV_DEVICES",
                                   NULL};

static int clean_env(void **state)
{
    (void)state;
    for (int i = 0; vars[i]; i++)
        unsetenv(vars[i]);
    return 0;
}

static void defaults(void **state)
{
    (void)state;
    tether__config cfg;
    assert_int_equal(tether__config_load(&cfg), TETHER_OK);
    assert_int_equal(cfg.rank, -1);
    assert_int_equal(cfg.size, -1);
    assert_null(cfg.hostfile);
    assert_null(cfg.coordinator);
    assert_int_equal(cfg.timeout_ms, 120000);
    assert_int_equal(cfg.nprefixes, 0);
    assert_int_equal(cfg.wire_bf16, 0);
}

static void mlx_and_torch_fallbacks(void **state)
{
    (void)state;
    tether__config cfg;
    setenv("MLX_RANK", "3", 1);
    setenv("MLX_HOSTFILE", "/tmp/h.json", 1);
    setenv("MASTER_ADDR", "10.0.0.1", 1);
    setenv("MASTER_PORT", "29500", 1);
    setenv("WORLD_SIZE", "4", 1);
    assert_int_equal(tether__config_load(&cfg), TETHER_OK);
    assert_int_equal(cfg.rank, 3);
    assert_int_equal(cfg.size, 4);
    assert_string_equal(cfg.hostfile, "/tmp/h.json");
    assert_string_equal(cfg.coordinator, "10.0.0.1:29500");
    setenv("TETHER_RANK", "1", 1); /* the TETHER_ name wins */
    assert_int_equal(tether__config_load(&cfg), TETHER_OK);
    assert_int_equal(cfg.rank, 1);
}

static void malformed_values_name_the_variable(void **state)
{
    (void)state;
    tether__config cfg;
    const char *bad[][2] = {{"TETHER_RANK", "two"},
                            {"TETHER_RANK", "-1"},
                            {"TETHER_TIMEOUT", "-1"},
                            {"TETHER_HEARTBEAT", "0"},
                            {"TETHER_HEARTBEAT", "1s"},
                            {"TETHER_TIMEOUT", "5s"},
                            {"TETHER_WIRE_DTYPE", "fp8"},
                            {"TETHER_ALLREDUCE_ALGO", "fastest"},
                            {"TETHER_TREE_BELOW", "abc"},
                            {"TETHER_TREE_BELOW", "-1"},
                            {"TETHER_TREE_BELOW", "64k"},
                            {"TETHER_HEARTBEAT", "0x10"},
                            {"TETHER_HEARTBEAT", " 2"},
                            {"TETHER_HEARTBEAT", "1e1"},
                            {"TETHER_HEARTBEAT", "inf"},
                            {"TETHER_TIMEOUT", " 5"},
                            {"TETHER_TIMEOUT", "+5"},
                            {"TETHER_SPIN_US", "\t10"},
                            {"TETHER_TREE_BELOW", " 64"},
                            {"TETHER_TREE_BELOW", "+64"},
                            {"WORLD_SIZE", ""}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clean_env(NULL);
        setenv(bad[i][0], bad[i][1], 1);
        tether__clear_error(); /* the first failure of a call wins: start each case afresh */
        int rc = tether__config_load(&cfg);
        if (!*bad[i][1]) { /* empty counts as unset */
            assert_int_equal(rc, TETHER_OK);
            continue;
        }
        if (rc != TETHER_ECONFIG || !strstr(tether_last_error(), bad[i][0]))
            fail_msg("%s=\"%s\": %s, \"%s\"; want TETHER_ECONFIG naming the variable", bad[i][0],
                     bad[i][1], tether_err_name(rc), tether_last_error());
    }
}

static void iface_filter(void **state)
{
    (void)state;
    tether__config cfg;
    setenv("TETHER_IFACE_PRIORITY", "192.168.101.,192.168.102.", 1);
    assert_int_equal(tether__config_load(&cfg), TETHER_OK);
    assert_int_equal(cfg.nprefixes, 2);
    assert_true(tether__addr_allowed(&cfg, "192.168.102.2"));
    assert_false(tether__addr_allowed(&cfg, "10.0.0.2"));
    unsetenv("TETHER_IFACE_PRIORITY");
    assert_int_equal(tether__config_load(&cfg), TETHER_OK);
    assert_true(tether__addr_allowed(&cfg, "10.0.0.2"));
}

/* TETHER_TIMEOUT unset: -1 (tether__world_open makes it none where heartbeats run), 120 s to form
 * the world; 0: no deadline for a call (heartbeats decide), the default for forming the world;
 * TETHER_HEARTBEAT in seconds with a fraction; TETHER_DEADLOCK on unless 0. */
static void timeout_zero_and_heartbeat(void **state)
{
    (void)state;
    tether__config cfg;
    assert_int_equal(tether__config_load(&cfg), TETHER_OK);
    assert_int_equal(cfg.call_timeout_ms, -1);
    assert_int_equal(cfg.timeout_ms, 120000);
    assert_int_equal(cfg.heartbeat_ms, 1000);
    assert_int_equal(cfg.deadlock, 1);
    setenv("TETHER_DEADLOCK", "0", 1);
    assert_int_equal(tether__config_load(&cfg), TETHER_OK);
    assert_int_equal(cfg.deadlock, 0);
    setenv("TETHER_DEADLOCK", "yes", 1);
    assert_int_equal(tether__config_load(&cfg), TETHER_ECONFIG);
    unsetenv("TETHER_DEADLOCK");
    setenv("TETHER_TIMEOUT", "0", 1);
    setenv("TETHER_HEARTBEAT", "0.25", 1);
    assert_int_equal(tether__config_load(&cfg), TETHER_OK);
    assert_int_equal(cfg.call_timeout_ms, 0);
    assert_int_equal(cfg.timeout_ms, 120000);
    assert_int_equal(cfg.heartbeat_ms, 250);
}

/* mccl's variables are read where tether's are unset, and tether's win. */
static void mccl_aliases(void **state)
{
    (void)state;
    tether__config cfg;
    setenv("MCCL_IFACE_PRIORITY", "192.168.101.,192.168.102.,192.168.103.", 1);
    setenv("MCCL_WIRE_DTYPE", "bf16", 1);
    assert_int_equal(tether__config_load(&cfg), TETHER_OK);
    assert_int_equal(cfg.nprefixes, 3);
    assert_false(tether__addr_allowed(&cfg, "10.0.0.2"));
    assert_int_equal(cfg.wire_bf16, 1);
    setenv("TETHER_IFACE_PRIORITY", "10.", 1);
    assert_int_equal(tether__config_load(&cfg), TETHER_OK);
    assert_int_equal(cfg.nprefixes, 1);
    assert_true(tether__addr_allowed(&cfg, "10.0.0.2"));
    setenv("MCCL_ALLREDUCE_ALGO", "fastest", 1);
    assert_int_equal(tether__config_load(&cfg), TETHER_ECONFIG);
    setenv("MCCL_ALLREDUCE_ALGO", "butterfly", 1);
    assert_int_equal(tether__config_load(&cfg), TETHER_OK);
}

/* MLX's NCCL-style MLX_WORLD_SIZE gives the size; MLX's backend names are tether's. */
static void mlx_size_and_names(void **state)
{
    (void)state;
    tether__config cfg;
    tether_group *g = NULL;
    setenv("MLX_WORLD_SIZE", "3", 1);
    assert_int_equal(tether__config_load(&cfg), TETHER_OK);
    assert_int_equal(cfg.size, 3);
    assert_string_equal(tether__backend_canonical("jaccl"), "rdma");
    assert_string_equal(tether__backend_canonical("jaccl-ring"), "rdma");
    assert_string_equal(tether__backend_canonical("ring"), "ring");
    assert_string_equal(tether__backend_canonical("mpi"), "mpi");
    assert_null(tether__backend_canonical("nccl"));
    /* "jaccl" is a backend name (unconfigured here), not an unknown one. */
    assert_int_equal(tether_init("jaccl", 1, &g), TETHER_EUNAVAIL);
    assert_non_null(strstr(tether_last_error(), "rdma"));
    setenv("TETHER_BACKEND", "jaccl-ring", 1);
    assert_int_equal(tether_init("any", 1, &g), TETHER_EUNAVAIL);
    assert_int_equal(tether_is_available(NULL), 0); /* a size alone configures no backend */
}

static void unknown_backend(void **state)
{
    (void)state;
    tether_group *g = NULL;
    assert_int_equal(tether_init("tcp", 0, &g), TETHER_EINVAL);
    assert_non_null(strstr(tether_last_error(), "\"tcp\""));
    setenv("TETHER_BACKEND", "nope", 1);
    assert_int_equal(tether_init("any", 0, &g), TETHER_ECONFIG);
    assert_non_null(strstr(tether_last_error(), "TETHER_BACKEND"));
}

static void singleton_without_configuration(void **state)
{
    (void)state;
    tether_group *g = NULL;
    assert_int_equal(tether_init("any", 0, &g), TETHER_OK);
    assert_int_equal(tether_group_size(g), 1);
    assert_string_equal(tether_group_backend(g), "singleton");
    float x[3] = {1, 2, 3}, y[3];
    assert_int_equal(tether_all_reduce(g, x, y, 3, TETHER_FLOAT32, TETHER_SUM), TETHER_OK);
    assert_memory_equal(x, y, sizeof x);
    assert_int_equal(tether_send(g, x, 3, TETHER_FLOAT32, 0), TETHER_EINVAL);
    assert_int_equal(tether_barrier(g), TETHER_OK);
    tether_group_free(g);
    assert_int_equal(tether_init("any", 1, &g),
                     TETHER_EUNAVAIL); /* strict: names what is missing */
    assert_non_null(strstr(tether_last_error(), "mesh"));
}

/* A configuration that is present but broken is an error, never a quiet group of size 1. */
static void broken_configuration_is_an_error(void **state)
{
    (void)state;
    tether_group *g = NULL;
    setenv("TETHER_RANK", "0", 1);
    setenv("TETHER_HOSTFILE", "/nonexistent/tether-hosts.json", 1);
    int rc = tether_init("any", 0, &g);
    assert_int_equal(rc, TETHER_ECONFIG);
    assert_null(g);
    assert_non_null(strstr(tether_last_error(), "/nonexistent/tether-hosts.json"));
}

/* tether_init("any", strict) and a named backend's lenient fallback fail with TETHER_ECONFIG,
 * forming nothing, and the message holds each of words. */
static void expect_half_configuration(const char *const *words)
{
    static const char *const calls[] = {"any", "any", "ring"};
    for (int i = 0; i < 3; i++) {
        tether_group *g = NULL;
        assert_int_equal(tether_init(calls[i], i == 1, &g), TETHER_ECONFIG);
        assert_null(g);
        for (const char *const *w = words; *w; w++)
            if (!strstr(tether_last_error(), *w))
                fail_msg("tether_init(\"%s\", %d): \"%s\" lacks \"%s\"", calls[i], i == 1,
                         tether_last_error(), *w);
    }
}

static void expect_singleton(void)
{
    tether_group *g = NULL;
    assert_int_equal(tether_init("any", 0, &g), TETHER_OK);
    assert_int_equal(tether_group_size(g), 1);
    tether_group_free(g);
}

/* A job the environment announces but gives no way to reach is an error, never size 1 (#37 item 6):
 * tether's rank and size without a hostfile or coordinator... */
static void half_tether_job(void **state)
{
    (void)state;
    setenv("TETHER_RANK", "1", 1);
    setenv("TETHER_SIZE", "4", 1);
    expect_half_configuration((const char *const[]){"TETHER_RANK=1", "TETHER_SIZE=4",
                                                    "TETHER_HOSTFILE", "TETHER_COORDINATOR", NULL});
    unsetenv("TETHER_SIZE"); /* a rank alone: tether's names are set by launchers only */
    expect_half_configuration((const char *const[]){"TETHER_RANK=1", NULL});
}

/* ...torchrun's variables without MASTER_PORT... */
static void half_torchrun_job(void **state)
{
    (void)state;
    setenv("RANK", "1", 1);
    setenv("LOCAL_RANK", "1", 1);
    setenv("WORLD_SIZE", "4", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    expect_half_configuration((const char *const[]){
        "RANK=1", "WORLD_SIZE=4", "MASTER_ADDR=127.0.0.1", "MASTER_PORT is unset", NULL});
}

/* ...MLX's rank and size without MLX_HOSTFILE, and an RDMA device matrix without a coordinator. */
static void half_mlx_job(void **state)
{
    (void)state;
    setenv("MLX_RANK", "0", 1);
    setenv("MLX_WORLD_SIZE", "2", 1);
    expect_half_configuration(
        (const char *const[]){"MLX_RANK=0", "MLX_WORLD_SIZE=2", "MLX_HOSTFILE", NULL});
    unsetenv("MLX_RANK");
    unsetenv("MLX_WORLD_SIZE");
    setenv("MLX_IBV_DEVICES", "/tmp/devices.json", 1);
    expect_half_configuration(
        (const char *const[]){"MLX_IBV_DEVICES=/tmp/devices.json", "TETHER_COORDINATOR", NULL});
}

/* What announces no job: torchrun's generic names alone, and a size of 1 (a complete singleton,
 * whose rank must be 0). */
static void not_a_job(void **state)
{
    (void)state;
    static const char *const lone[][2] = {
        {"RANK", "3"}, {"LOCAL_RANK", "2"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}};
    for (size_t i = 0; i < sizeof lone / sizeof lone[0]; i++) {
        setenv(lone[i][0], lone[i][1], 1);
        expect_singleton();
        unsetenv(lone[i][0]);
    }
    setenv("WORLD_SIZE", "1", 1);
    setenv("RANK", "0", 1);
    expect_singleton();
    setenv("TETHER_SIZE", "1", 1);
    setenv("TETHER_RANK", "0", 1);
    expect_singleton();
    setenv("TETHER_RANK", "2", 1);
    expect_half_configuration((const char *const[]){"rank 2 in a job of size 1", NULL});
}

/* docs/env.md, read whole. */
static const char *env_md(void)
{
    static char text[1 << 16];
    const char *src = getenv("TETHER_SOURCE_DIR");
    assert_non_null(src);
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/env.md", src);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    assert_true(n < sizeof text - 1);
    return text;
}

/* docs/env.md must name every variable tether reads, and every other name it is read by. */
static void docs_name_every_variable(void **state)
{
    (void)state;
    const char *text = env_md();
    const tether__param_row *tables[] = {tether__params, tether__params_other};
    int counts[] = {TETHER__P_COUNT, INT_MAX};
    for (int t = 0; t < 2; t++)
        for (const tether__param_row *v = tables[t]; v - tables[t] < counts[t] && v->name; v++) {
            char quoted[128];
            snprintf(quoted, sizeof quoted, "`%s`", v->name);
            if (!strstr(text, quoted))
                fail_msg("docs/env.md does not document %s", v->name);
            for (int i = 0; i < TETHER__PARAM_ALIASES && v->aliases[i]; i++)
                for (const char *p = v->aliases[i]; *p;) { /* "A:B" is two names */
                    size_t len = strcspn(p, ":");
                    snprintf(quoted, sizeof quoted, "`%.*s`", (int)len, p);
                    if (!strstr(text, quoted))
                        fail_msg("docs/env.md does not name %s, read for %s", quoted, v->name);
                    p += len + (p[len] == ':');
                }
        }
}

/* The cells of docs/env.md's row for name (its first table: variable, also read, default, values,
 * meaning), backticks dropped, into cells; 0 when there is no such row. */
static int docs_row(const char *text, const char *name, char cells[5][1024])
{
    char start[128];
    snprintf(start, sizeof start, "\n| `%s` |", name);
    const char *p = strstr(text, start);
    if (!p)
        return 0;
    p += 2; /* past the newline and the first bar */
    for (int c = 0; c < 5; c++) {
        size_t o = 0;
        while (*p == ' ')
            p++;
        for (; *p && *p != '|' && *p != '\n'; p++)
            if (*p != '`' && o < 1023)
                cells[c][o++] = *p;
        while (o && cells[c][o - 1] == ' ')
            o--;
        cells[c][o] = '\0';
        if (*p != '|')
            return 0;
        p++;
    }
    return 1;
}

/* Each digit run of want is in got: a computed default's numbers are the page's. */
static int numbers_in(const char *want, const char *got)
{
    for (const char *p = want; *p;) {
        size_t skip = strcspn(p, "0123456789"), len = strspn(p + skip, "0123456789");
        char n[32];
        if (!len)
            return 1;
        snprintf(n, sizeof n, "%.*s", (int)len, p + skip);
        if (!strstr(got, n))
            return 0;
        p += skip + len;
    }
    return 1;
}

/* docs/env.md's other names, default and values of each setting are its row's, so a default
 * changed in one place and not the other fails here. A computed default (the row says how, in
 * words) must be described with the row's numbers; a text one must be quoted; a number must be the
 * row's exactly. */
static void docs_match_the_rows(void **state)
{
    (void)state;
    const char *text = env_md();
    for (int id = 0; id < TETHER__P_COUNT; id++) {
        const tether__param_row *r = &tether__params[id];
        char cells[5][1024], def[256], range[256], also[256] = "";
        assert_non_null(r->name);
        if (!docs_row(text, r->name, cells))
            fail_msg("docs/env.md has no row | `%s` | ... of five cells", r->name);
        for (int i = 0; i < TETHER__PARAM_ALIASES && r->aliases[i]; i++)
            snprintf(also + strlen(also), sizeof also - strlen(also), "%s%s", i ? ", " : "",
                     r->aliases[i]);
        if (strcmp(cells[1], also) != 0)
            fail_msg("%s: docs/env.md says also read \"%s\", the row \"%s\"", r->name, cells[1],
                     also);
        tether__param_default_text(r, def, sizeof def);
        int same = r->computed   ? cells[2][0] && numbers_in(def, cells[2])
                   : r->def_text ? (def[0] ? strstr(cells[2], def) != NULL : !cells[2][0])
                                 : strcmp(cells[2], def) == 0;
        if (!same)
            fail_msg("%s: docs/env.md's default \"%s\" is not the row's \"%s\"", r->name, cells[2],
                     def);
        tether__param_range_text(r, range, sizeof range);
        if (strcmp(cells[3], range) != 0)
            fail_msg("%s: docs/env.md's values \"%s\" are not the row's \"%s\"", r->name, cells[3],
                     range);
    }
}

/* Settings are read through the accessor, by the table's rows: a value, an alias, the default,
 * and a change of the environment seen at the next read. */
static void accessor_reads_the_rows(void **state)
{
    (void)state;
    long v;
    const char *t;
    assert_int_equal(tether__param_long(TETHER__P_TCP_LOCAL_SNDBUF, &v), 0); /* computed */
    setenv("TETHER_TCP_LOCAL_SNDBUF", "131072", 1);
    assert_int_equal(tether__param_long(TETHER__P_TCP_LOCAL_SNDBUF, &v), 1);
    assert_int_equal(v, 131072);
    setenv("TETHER_TCP_LOCAL_SNDBUF", "262144", 1); /* changed: seen */
    assert_int_equal(tether__param_long(TETHER__P_TCP_LOCAL_SNDBUF, &v), 1);
    assert_int_equal(v, 262144);
    unsetenv("TETHER_TCP_LOCAL_SNDBUF");
    assert_int_equal(tether__param_long(TETHER__P_TCP_LOCAL_SNDBUF, &v), 0);
    assert_int_equal(tether__param_long(TETHER__P_SPIN_US, &v), 0);
    assert_int_equal(v, tether__params[TETHER__P_SPIN_US].def);
    setenv("TETHER_SPIN_US", "", 1); /* empty: unset */
    assert_int_equal(tether__param_long(TETHER__P_SPIN_US, &v), 0);
    setenv("TETHER_SPIN_US", "1000001", 1);
    tether__clear_error(); /* the first error is the one kept */
    assert_int_equal(tether__param_long(TETHER__P_SPIN_US, &v), TETHER_ECONFIG);
    assert_non_null(
        strstr(tether_last_error(),
               "TETHER_SPIN_US=\"1000001\": expected a whole number from 0 to 1000000"));
    assert_int_equal(tether__param_quiet(TETHER__P_SPIN_US), tether__params[TETHER__P_SPIN_US].def);
    unsetenv("TETHER_SPIN_US");
    setenv("MLX_RING_VERBOSE", "2", 1); /* an alias, named as the source */
    assert_int_equal(tether__param_long(TETHER__P_VERBOSE, &v), 1);
    assert_int_equal(v, 2);
    assert_string_equal(tether__param_from(TETHER__P_VERBOSE), "MLX_RING_VERBOSE");
    setenv("TETHER_VERBOSE", "1", 1); /* the tether name wins */
    assert_int_equal(tether__param_long(TETHER__P_VERBOSE, &v), 1);
    assert_int_equal(v, 1);
    unsetenv("TETHER_VERBOSE");
    unsetenv("MLX_RING_VERBOSE");
    assert_null(tether__param_from(TETHER__P_VERBOSE));
    assert_int_equal(tether__param_text(TETHER__P_BACKEND, &t), 0); /* a text default */
    assert_string_equal(t, "any");
    assert_int_equal(tether__param_text(TETHER__P_JOB_TOKEN, &t), 0); /* computed: none here */
    assert_null(t);
    setenv("TETHER_HEARTBEAT", "0.2", 1); /* seconds, given in milliseconds */
    assert_int_equal(tether__param_long(TETHER__P_HEARTBEAT, &v), 1);
    assert_int_equal(v, 200);
    unsetenv("TETHER_HEARTBEAT");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(defaults, clean_env),
        cmocka_unit_test_setup(mlx_and_torch_fallbacks, clean_env),
        cmocka_unit_test_setup(malformed_values_name_the_variable, clean_env),
        cmocka_unit_test_setup(iface_filter, clean_env),
        cmocka_unit_test_setup(unknown_backend, clean_env),
        cmocka_unit_test_setup(mccl_aliases, clean_env),
        cmocka_unit_test_setup(timeout_zero_and_heartbeat, clean_env),
        cmocka_unit_test_setup(mlx_size_and_names, clean_env),
        cmocka_unit_test_setup(singleton_without_configuration, clean_env),
        cmocka_unit_test_setup(broken_configuration_is_an_error, clean_env),
        cmocka_unit_test_setup(half_tether_job, clean_env),
        cmocka_unit_test_setup(half_torchrun_job, clean_env),
        cmocka_unit_test_setup(half_mlx_job, clean_env),
        cmocka_unit_test_setup(not_a_job, clean_env),
        cmocka_unit_test(docs_name_every_variable),
        cmocka_unit_test(docs_match_the_rows),
        cmocka_unit_test_setup(accessor_reads_the_rows, clean_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
