/* tests/unit/test_hostfile.c - hostfile parsing: every good form, one case per bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/errors.h"
#include "hostfile/hostfile.h"

enum kind { RANKS, LAUNCH, DEVICES };

/* One bad input: what is parsed, and a part of the message that names the position. */
typedef struct bad_case {
    const char *label;
    enum kind kind;
    const char *json;
    const char *want;
} bad_case;

static const bad_case bad_cases[] = {
    /* per-rank hostfile, parsed as "hosts.json" */
    {"ranks: JSON syntax", RANKS, "[[\"10.0.0.1:5000\"],\n [\"10.0.0.2:5000\"]",
     "hosts.json: line 2, column 18: invalid JSON: "},
    {"ranks: trailing garbage", RANKS, "[[\"10.0.0.1:5000\"]] x",
     "hosts.json: line 1, column 21: invalid JSON: end of file expected"},
    {"ranks: not a list", RANKS, "{\"rank0\": [\"10.0.0.1:5000\"]}",
     "hosts.json: expected a list with one entry per rank, each a list of \"ip:port\", got an "
     "object"},
    {"ranks: empty list", RANKS, "[]",
     "hosts.json: the list of ranks is empty; expected one entry per rank"},
    {"ranks: entry not a list", RANKS, "[[\"10.0.0.1:5000\"], \"10.0.0.2:5000\"]",
     "hosts.json: rank 1: expected a list of \"ip:port\" strings, got a string"},
    {"ranks: empty entry", RANKS, "[[\"10.0.0.1:5000\"], []]",
     "hosts.json: rank 1: empty list; expected at least one \"ip:port\""},
    {"ranks: non-string address", RANKS, "[[\"10.0.0.1:5000\", 5001]]",
     "hosts.json: rank 0, address 1: expected an \"ip:port\" string, got an integer"},
    {"ranks: missing port", RANKS, "[[\"10.0.0.3:5000\"], [\"10.0.0.2:5000\"], [\"10.0.0.1\"]]",
     "hosts.json: rank 2, address 0: \"10.0.0.1\" has no port; expected \"ip:port\""},
    {"ranks: port 0", RANKS, "[[\"10.0.0.1:0\"]]",
     "hosts.json: rank 0, address 0: \"10.0.0.1:0\" has port 0; expected 1-65535"},
    {"ranks: port 65536", RANKS, "[[\"10.0.0.1:5000\"], [\"10.0.0.2:65536\"]]",
     "hosts.json: rank 1, address 0: \"10.0.0.2:65536\" has port 65536; expected 1-65535"},
    {"ranks: port non-numeric", RANKS, "[[\"10.0.0.1:http\"]]",
     "hosts.json: rank 0, address 0: \"10.0.0.1:http\" has port \"http\"; expected a number"},
    {"ranks: port empty", RANKS, "[[\"10.0.0.1:\"]]",
     "hosts.json: rank 0, address 0: \"10.0.0.1:\" has port \"\"; expected a number"},
    {"ranks: port signed", RANKS, "[[\"10.0.0.1:+80\"]]",
     "hosts.json: rank 0, address 0: \"10.0.0.1:+80\" has port \"+80\""},
    {"ranks: bad IPv4 octet", RANKS, "[[\"10.0.0.1:5000\", \"256.1.1.1:5000\"]]",
     "hosts.json: rank 0, address 1: \"256.1.1.1\" is not a valid IPv4 address"},
    {"ranks: three-part IPv4", RANKS, "[[\"10.0.1:5000\"]]",
     "hosts.json: rank 0, address 0: \"10.0.1\" is not a valid IPv4 address"},
    {"ranks: IPv6 without brackets", RANKS, "[[\"fe80::1:5000\"]]",
     "hosts.json: rank 0, address 0: \"fe80::1\" looks like an IPv6 address; write it in "
     "brackets"},
    {"ranks: IPv6 bracket unclosed", RANKS, "[[\"[fe80::1:5000\"]]",
     "hosts.json: rank 0, address 0: \"[fe80::1:5000\" lacks the closing ']'"},
    {"ranks: IPv6 bracket without port", RANKS, "[[\"[fe80::1]\"]]",
     "hosts.json: rank 0, address 0: \"[fe80::1]\" has no port; expected \"[ipv6]:port\""},
    {"ranks: IPv6 invalid", RANKS, "[[\"[fe80::zz]:5000\"]]",
     "hosts.json: rank 0, address 0: \"fe80::zz\" is not a valid IPv6 address"},
    {"ranks: host name with space", RANKS, "[[\"my mac:5000\"]]",
     "hosts.json: rank 0, address 0: \"my mac\" is not a valid host name: character ' '"},
    {"ranks: host name empty label", RANKS, "[[\"mac..local:5000\"]]",
     "hosts.json: rank 0, address 0: \"mac..local\" is not a valid host name: an empty label"},
    {"ranks: empty host", RANKS, "[[\":5000\"]]",
     "hosts.json: rank 0, address 0: empty host; expected an IPv4 address or a host name"},
    {"ranks: duplicate across ranks", RANKS,
     "[[\"10.0.0.1:5000\"], [\"10.0.0.2:5000\", \"10.0.0.1:5000\"]]",
     "hosts.json: rank 1, address 1: \"10.0.0.1:5000\" is also rank 0, address 0; every "
     "listen address must be unique"},
    {"ranks: duplicate within a rank", RANKS, "[[\"a.local:5000\", \"a.local:5000\"]]",
     "hosts.json: rank 0, address 1: \"a.local:5000\" is also rank 0, address 0"},

    /* launcher hostfile, parsed as "cluster.json" */
    {"launch: JSON syntax", LAUNCH, "{\"hosts\": [{\"ssh\": \"h1\",}]}",
     "cluster.json: line 1, column 25: invalid JSON: "},
    {"launch: hosts wrong type", LAUNCH, "{\"hosts\": {\"ssh\": \"h1\"}}",
     "cluster.json: \"hosts\": expected a list of host objects, got an object"},
    {"launch: hosts missing", LAUNCH, "{\"backend\": \"ring\"}",
     "cluster.json: no \"hosts\"; expected {\"hosts\": [{\"ssh\": ...}, ...]}"},
    {"launch: hosts empty", LAUNCH, "[]", "cluster.json: the list of hosts is empty"},
    {"launch: host not an object", LAUNCH, "[{\"ssh\": \"h1\"}, \"h2\"]",
     "cluster.json: host 1: expected an object {\"ssh\": ..., \"ips\": [...]}, got a string"},
    {"launch: ssh missing", LAUNCH, "[{\"ips\": [\"10.0.0.1\"]}]",
     "cluster.json: host 0: no \"ssh\"; expected the host name to ssh to"},
    {"launch: ssh not a string", LAUNCH, "[{\"ssh\": [\"h1\"]}]",
     "cluster.json: host 0: \"ssh\": expected a string, got a list"},
    {"launch: ssh empty", LAUNCH, "[{\"ssh\": \"h1\"}, {\"ssh\": \"\"}]",
     "cluster.json: host 1: \"ssh\": \"\" is empty; expected \"host\" or \"user@host\""},
    {"launch: ssh is an option", LAUNCH, "[{\"ssh\": \"-oProxyCommand=sh\"}]",
     "cluster.json: host 0: \"ssh\": \"-oProxyCommand=sh\" is an ssh option"},
    {"launch: ssh with space", LAUNCH, "[{\"ssh\": \"h1 -p 22\"}]",
     "cluster.json: host 0: \"ssh\": \"h1 -p 22\" contains a space or control character"},
    {"launch: unknown host key", LAUNCH, "[{\"ssh\": \"h1\", \"ip\": [\"10.0.0.1\"]}]",
     "cluster.json: host 0: unknown key \"ip\"; expected \"ssh\", \"ips\" and \"rdma\""},
    {"launch: unknown top key", LAUNCH, "{\"host\": [{\"ssh\": \"h1\"}]}",
     "cluster.json: unknown key \"host\"; expected \"backend\", \"envs\" and \"hosts\""},
    {"launch: ips not a list", LAUNCH, "[{\"ssh\": \"h1\", \"ips\": \"10.0.0.1\"}]",
     "cluster.json: host 0: \"ips\": expected a list of IP addresses, got a string"},
    {"launch: ip not a string", LAUNCH, "[{\"ssh\": \"h1\", \"ips\": [\"10.0.0.1\", null]}]",
     "cluster.json: host 0, ips[1]: expected an IP address string, got null"},
    {"launch: ip invalid", LAUNCH,
     "[{\"ssh\": \"h1\"}, {\"ssh\": \"h2\", \"ips\": [\"256.1.1.1\"]}]",
     "cluster.json: host 1, ips[0]: \"256.1.1.1\" is not a valid IPv4 address"},
    {"launch: ip duplicate", LAUNCH, "[{\"ssh\": \"h1\", \"ips\": [\"10.0.0.1\", \"10.0.0.1\"]}]",
     "cluster.json: host 0, ips[1]: \"10.0.0.1\" is also ips[0]"},
    {"launch: backend unknown", LAUNCH, "{\"backend\": \"nccl\", \"hosts\": [{\"ssh\": \"h1\"}]}",
     "cluster.json: \"backend\": unknown backend \"nccl\"; expected any, mpi, rdma "
     "(or jaccl, jaccl-ring), mesh, ring or singleton"},
    {"launch: backend not a string", LAUNCH, "{\"backend\": 1, \"hosts\": [{\"ssh\": \"h1\"}]}",
     "cluster.json: \"backend\": expected a string, got an integer"},
    {"launch: envs not a list", LAUNCH, "{\"envs\": \"A=1\", \"hosts\": [{\"ssh\": \"h1\"}]}",
     "cluster.json: \"envs\": expected a list of \"KEY=VALUE\" strings, got a string"},
    {"launch: env without =", LAUNCH,
     "{\"envs\": [\"A=1\", \"VERBOSE\"], \"hosts\": [{\"ssh\": \"h1\"}]}",
     "cluster.json: envs[1]: \"VERBOSE\" is not KEY=VALUE"},
    {"launch: env bad key", LAUNCH, "{\"envs\": [\"1A=1\"], \"hosts\": [{\"ssh\": \"h1\"}]}",
     "cluster.json: envs[0]: \"1A=1\" is not KEY=VALUE"},
    {"launch: env not a string", LAUNCH, "{\"envs\": [{\"A\": 1}], \"hosts\": [{\"ssh\": \"h1\"}]}",
     "cluster.json: envs[0]: expected a \"KEY=VALUE\" string, got an object"},
    {"launch: rdma not a list", LAUNCH, "[{\"ssh\": \"h1\", \"rdma\": \"rdma_en2\"}]",
     "cluster.json: host 0: \"rdma\": expected a list with one entry per host"},
    {"launch: rdma ragged", LAUNCH,
     "[{\"ssh\": \"h1\", \"rdma\": [null, \"rdma_en2\", \"rdma_en3\"]},"
     " {\"ssh\": \"h2\", \"rdma\": [\"rdma_en2\", null]},"
     " {\"ssh\": \"h3\", \"rdma\": [\"rdma_en3\", null, null]}]",
     "cluster.json: host 1: \"rdma\" has 2 entries; expected 3 (one per host, null for itself)"},
    {"launch: rdma on some hosts only", LAUNCH,
     "[{\"ssh\": \"h1\"}, {\"ssh\": \"h2\", \"rdma\": [\"rdma_en2\", null]}]",
     "cluster.json: host 0: \"rdma\" has 0 entries; expected 2 (one per host, null for itself) "
     "since host 1 has an \"rdma\" list"},
    {"launch: rdma diagonal not null", LAUNCH,
     "[{\"ssh\": \"h1\", \"rdma\": [null, \"rdma_en2\"]},"
     " {\"ssh\": \"h2\", \"rdma\": [\"rdma_en2\", \"rdma_en3\"]}]",
     "cluster.json: host 1, rdma[1]: \"rdma_en3\" links host 1 to itself; expected null on the "
     "diagonal"},
    {"launch: rdma one-sided", LAUNCH,
     "[{\"ssh\": \"h1\", \"rdma\": [null, \"rdma_en2\"]}, {\"ssh\": \"h2\", \"rdma\": [null, "
     "null]}]",
     "cluster.json: host 0, rdma[1] names 1 device(s) but host 1, rdma[0] names 0"},
    {"launch: rdma entry wrong type", LAUNCH,
     "[{\"ssh\": \"h1\", \"rdma\": [null, 2]}, {\"ssh\": \"h2\", \"rdma\": [\"rdma_en2\", null]}]",
     "cluster.json: host 0, rdma[1]: expected null, a device name or a list of device names, "
     "got an integer"},

    /* device matrix, parsed as "devices.json" */
    {"devices: JSON syntax", DEVICES, "[[null, \"rdma_en2\"], [\"rdma_en2\" null]]",
     "devices.json: line 1, column 37: invalid JSON: ']' expected near 'null'"},
    {"devices: not a list", DEVICES, "{\"0\": [null]}",
     "devices.json: expected an N x N list of lists"},
    {"devices: empty", DEVICES, "[]", "devices.json: the device matrix is empty"},
    {"devices: row not a list", DEVICES, "[[null, \"rdma_en2\"], \"rdma_en2\"]",
     "devices.json: row 1: expected a list of 2 entries (null or device names, one per rank), got "
     "a string"},
    {"devices: ragged", DEVICES, "[[null, \"a\", \"b\"], [\"a\", null], [\"b\", null, null]]",
     "devices.json: row 1 has 2 entries; expected 3 (one per rank"},
    {"devices: diagonal not null", DEVICES, "[[\"rdma_en2\", \"rdma_en3\"], [\"rdma_en3\", null]]",
     "devices.json: row 0, column 0: \"rdma_en2\" links rank 0 to itself; expected null on the "
     "diagonal"},
    {"devices: one-sided link", DEVICES, "[[null, \"rdma_en2\"], [null, null]]",
     "devices.json: row 0, column 1 names 1 device(s) but row 1, column 0 names 0; a cable links "
     "both ends"},
    {"devices: cable count differs", DEVICES,
     "[[null, [\"rdma_en2\", \"rdma_en3\"]], [\"rdma_en2\", null]]",
     "devices.json: row 0, column 1 names 2 device(s) but row 1, column 0 names 1"},
    {"devices: cell wrong type", DEVICES, "[[null, true], [true, null]]",
     "devices.json: row 0, column 1: expected null, a device name or a list of device names, got "
     "true"},
    {"devices: list entry not a string", DEVICES, "[[null, [\"rdma_en2\", 3]], [null, null]]",
     "devices.json: row 0, column 1, entry 1: expected a device name string, got an integer"},
    {"devices: duplicate device in a list", DEVICES,
     "[[null, [\"rdma_en2\", \"rdma_en2\"]], [[\"a\", \"b\"], null]]",
     "devices.json: row 0, column 1, entry 1: \"rdma_en2\" is listed twice"},
    {"devices: empty device name", DEVICES, "[[null, \"\"], [\"\", null]]",
     "devices.json: row 0, column 1: empty device name"},
    {"devices: device name with space", DEVICES, "[[null, \"rdma en2\"], [\"rdma_en2\", null]]",
     "devices.json: row 0, column 1: device name \"rdma en2\" contains a space"},
};

static int parse_kind(const bad_case *c)
{
    tether__rank_hosts r;
    tether__launch_hosts l;
    tether__device_matrix m;

    switch (c->kind) {
    case RANKS:
        return tether__hostfile_parse_ranks(c->json, "hosts.json", &r);
    case LAUNCH:
        return tether__hostfile_parse_launch(c->json, "cluster.json", &l);
    case DEVICES:
        return tether__hostfile_parse_devices(c->json, "devices.json", &m);
    }
    return TETHER_EINTERNAL;
}

/* The call fails with code, and the recorded message contains want. */
static void expect_error(int rc, int code, const char *want)
{
    if (rc != code || !strstr(tether_last_error(), want))
        print_error("got %s: %s\nwanted %s with: %s\n", tether_err_name(rc), tether_last_error(),
                    tether_err_name(code), want);
    assert_int_equal(rc, code);
    assert_non_null(strstr(tether_last_error(), want));
}

static void test_bad_case(void **state)
{
    const bad_case *c = *state;

    tether__clear_error();
    expect_error(parse_kind(c), TETHER_ECONFIG, c->want);
}

static char *data_path(const char *file)
{
    static char path[4096];
    const char *dir = getenv("TETHER_TEST_DATA");

    assert_non_null(dir);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return path;
}

static void assert_addr(const tether__hostaddr *a, const char *host, int port)
{
    assert_string_equal(a->host, host);
    assert_int_equal(a->port, port);
}

static void test_ranks_mlx_file(void **state)
{
    tether__rank_hosts h;

    (void)state;
    assert_int_equal(tether__hostfile_load_ranks(data_path("hostfile_mlx_ring.json"), &h),
                     TETHER_OK);
    assert_int_equal(h.nranks, 4);
    for (int r = 0; r < 4; r++)
        assert_int_equal(h.naddrs[r], 2);
    assert_addr(&h.addrs[0][0], "123.123.1.1", 5000);
    assert_addr(&h.addrs[3][1], "123.123.4.2", 5000);
    tether__rank_hosts_free(&h);
    assert_null(h.addrs);
}

static void test_ranks_names_and_ipv6(void **state)
{
    tether__rank_hosts h;

    (void)state;
    assert_int_equal(tether__hostfile_parse_ranks("[[\"mac-1.local:1\", \"[fe80::1]:65535\"],"
                                                  " [\"localhost:5001\", \"host_2:5001\"]]",
                                                  NULL, &h),
                     TETHER_OK);
    assert_int_equal(h.nranks, 2);
    assert_addr(&h.addrs[0][0], "mac-1.local", 1);
    assert_addr(&h.addrs[0][1], "fe80::1", 65535);
    assert_addr(&h.addrs[1][0], "localhost", 5001);
    assert_addr(&h.addrs[1][1], "host_2", 5001);
    tether__rank_hosts_free(&h);
}

/* A hostfile of 200,000 ranks is checked for duplicates in linear-ish time (pairwise it took 92 s
 * at 190,000; ctest's timeout fails that), and the duplicate named is the first in the file. */
static void test_ranks_many(void **state)
{
    enum { N = 200000 };
    size_t cap = (size_t)N * 32 + 64, len = 0;
    char *json = malloc(cap);
    tether__rank_hosts h;

    (void)state;
    assert_non_null(json);
    len += (size_t)snprintf(json + len, cap - len, "[");
    for (int r = 0; r < N; r++)
        len += (size_t)snprintf(json + len, cap - len, "%s[\"10.%d.%d.1:%d\"]", r ? "," : "",
                                r / 60000, (r / 250) % 240, 1000 + r % 60000);
    snprintf(json + len, cap - len, "]");
    assert_int_equal(tether__hostfile_parse_ranks(json, NULL, &h), TETHER_OK);
    assert_int_equal(h.nranks, N);
    tether__rank_hosts_free(&h);
    /* rank N takes rank 7's address, and rank N + 1 repeats rank 3's: rank N is named */
    len += (size_t)snprintf(json + len, cap - len, ",[\"10.0.0.1:1007\"],[\"10.0.0.1:1003\"]]");
    expect_error(tether__hostfile_parse_ranks(json, NULL, &h), TETHER_ECONFIG,
                 "rank 200000, address 0: \"10.0.0.1:1007\" is also rank 7, address 0");
    free(json);
}

/* What write produces is MLX's format, byte for byte, and reads back to the same table. */
static void test_ranks_write_round_trip(void **state)
{
    static const char want[] = "[\n  [\"10.0.0.1:5000\", \"[fe80::1]:5001\"],\n"
                               "  [\"node2:5002\"]\n]\n";
    char path[] = "/tmp/tether_hostfile_XXXXXX", text[256] = {0};
    tether__rank_hosts h, back;
    FILE *f;
    int fd = mkstemp(path);

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(tether__hostfile_parse_ranks(want, "in", &h), TETHER_OK);
    assert_int_equal(tether__hostfile_write_ranks(path, &h), TETHER_OK);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_true(fread(text, 1, sizeof text - 1, f) > 0);
    fclose(f);
    assert_string_equal(text, want);
    assert_int_equal(tether__hostfile_load_ranks(path, &back), TETHER_OK);
    assert_int_equal(back.nranks, 2);
    assert_addr(&back.addrs[0][1], "fe80::1", 5001);
    tether__rank_hosts_free(&back);
    tether__rank_hosts_free(&h);
    unlink(path);
}

static void test_ranks_write_rejects_bad_table(void **state)
{
    tether__hostaddr a = {"10.0.0.1", 0}, *rows[1] = {&a};
    int n = 1;
    tether__rank_hosts h = {1, &n, rows};

    (void)state;
    tether__clear_error();
    expect_error(tether__hostfile_write_ranks("/tmp/never-written.json", &h), TETHER_EINVAL,
                 "/tmp/never-written.json: rank 0, address 0: port 0 is not 1-65535");
    assert_int_equal(access("/tmp/never-written.json", F_OK), -1);
}

static void test_load_missing_file(void **state)
{
    tether__rank_hosts h;

    (void)state;
    tether__clear_error();
    expect_error(tether__hostfile_load_ranks("/nonexistent/hosts.json", &h), TETHER_ECONFIG,
                 "/nonexistent/hosts.json: cannot open the hostfile: No such file or directory");
    assert_int_equal(h.nranks, 0);
}

static void test_load_directory(void **state)
{
    tether__launch_hosts h;
    const char *dir = getenv("TETHER_TEST_DATA");

    (void)state;
    tether__clear_error();
    expect_error(tether__hostfile_load_launch(dir, &h), TETHER_ECONFIG,
                 "cannot read the hostfile: Is a directory");
}

static void test_load_syntax_position(void **state)
{
    tether__rank_hosts h;
    char want[4200];

    (void)state;
    snprintf(want, sizeof want,
             "%s: line 2, column 9: invalid JSON:", data_path("hostfile_bad_syntax.json"));
    tether__clear_error();
    expect_error(tether__hostfile_load_ranks(data_path("hostfile_bad_syntax.json"), &h),
                 TETHER_ECONFIG, want);
}

static void test_launch_list_form(void **state)
{
    tether__launch_hosts h;

    (void)state;
    assert_int_equal(tether__hostfile_load_launch(data_path("hostfile_launch_list.json"), &h),
                     TETHER_OK);
    assert_string_equal(h.backend, "");
    assert_int_equal(h.nenvs, 0);
    assert_int_equal(h.nhosts, 4);
    assert_string_equal(h.hosts[2].ssh, "hostname3");
    assert_int_equal(h.hosts[2].nips, 1);
    assert_string_equal(h.hosts[2].ips[0], "123.123.123.3");
    assert_int_equal(h.hosts[2].nrdma, 0);
    tether__launch_hosts_free(&h);
}

static void test_launch_object_form_jaccl(void **state)
{
    tether__launch_hosts h;

    (void)state;
    assert_int_equal(tether__hostfile_load_launch(data_path("hostfile_launch_jaccl.json"), &h),
                     TETHER_OK);
    assert_string_equal(h.backend, "rdma");
    assert_int_equal(h.nenvs, 1);
    assert_string_equal(h.envs[0], "MLX_METAL_FAST_SYNCH=1");
    assert_int_equal(h.nhosts, 4);
    assert_int_equal(h.hosts[1].nips, 0);
    assert_int_equal(h.hosts[1].nrdma, 4);
    assert_null(h.hosts[1].rdma[1]);
    assert_string_equal(h.hosts[1].rdma[2], "rdma_en3");
    assert_string_equal(h.hosts[3].rdma[0], "rdma_en3");
    assert_null(h.hosts[3].rdma_devs[3][0]);
    tether__launch_hosts_free(&h);
}

/* Several cables to one peer, user@host, names and IPv6 in "ips", every known backend word. */
static void test_launch_object_form_variants(void **state)
{
    tether__launch_hosts h;
    const char *json =
        "{\"backend\": \"mesh\", \"envs\": [\"A=1\", \"B_2=x=y\", \"EMPTY=\"], \"hosts\": ["
        " {\"ssh\": \"me@mac1\", \"ips\": [\"192.168.1.1\", \"mac1.local\", \"fe80::1\"],"
        "  \"rdma\": [null, [\"rdma_en2\", \"rdma_en3\"]]},"
        " {\"ssh\": \"mac2\", \"rdma\": [[\"rdma_en4\", \"rdma_en5\"], []]}]}";

    (void)state;
    assert_int_equal(tether__hostfile_parse_launch(json, "x.json", &h), TETHER_OK);
    assert_string_equal(h.backend, "mesh");
    assert_int_equal(h.nenvs, 3);
    assert_string_equal(h.envs[1], "B_2=x=y");
    assert_string_equal(h.hosts[0].ssh, "me@mac1");
    assert_int_equal(h.hosts[0].nips, 3);
    assert_string_equal(h.hosts[0].ips[2], "fe80::1");
    assert_string_equal(h.hosts[0].rdma[1], "rdma_en2");
    assert_string_equal(h.hosts[0].rdma_devs[1][1], "rdma_en3");
    assert_null(h.hosts[0].rdma_devs[1][2]);
    assert_int_equal(h.hosts[1].nips, 0);
    assert_null(h.hosts[1].rdma[1]);
    tether__launch_hosts_free(&h);
    assert_int_equal(tether__hostfile_parse_launch("{\"backend\": \"jaccl-ring\", \"hosts\": "
                                                   "[{\"ssh\": \"a\"}]}",
                                                   "y.json", &h),
                     TETHER_OK);
    assert_string_equal(h.backend, "rdma");
    tether__launch_hosts_free(&h);
}

/* The writer gives MLX's object form, a list for several cables, and reads back the same. */
static void test_launch_write_round_trip(void **state)
{
    static const char want[] =
        "{\n  \"backend\": \"rdma\",\n  \"envs\": [\n    \"A=1\"\n  ],\n  \"hosts\": [\n"
        "    {\n      \"ssh\": \"m1\",\n      \"ips\": [\n        \"10.0.0.1\"\n      ],\n"
        "      \"rdma\": [\n        null,\n        [\n          \"rdma_en2\",\n"
        "          \"rdma_en3\"\n        ]\n      ]\n    },\n"
        "    {\n      \"ssh\": \"m2\",\n      \"ips\": [],\n"
        "      \"rdma\": [\n        [\n          \"rdma_en4\",\n          \"rdma_en5\"\n"
        "        ],\n        null\n      ]\n    }\n  ]\n}\n";
    tether__launch_hosts h, back;
    char *text;

    (void)state;
    assert_int_equal(tether__hostfile_parse_launch(want, "in", &h), TETHER_OK);
    assert_int_equal(tether__hostfile_format_launch(&h, &text), TETHER_OK);
    assert_string_equal(text, want);
    assert_int_equal(tether__hostfile_parse_launch(text, "out", &back), TETHER_OK);
    assert_string_equal(back.hosts[1].rdma_devs[0][1], "rdma_en5");
    free(text);
    tether__launch_hosts_free(&back);
    tether__launch_hosts_free(&h);
}

static void test_devices_mlx_file(void **state)
{
    tether__device_matrix m;

    (void)state;
    assert_int_equal(tether__hostfile_load_devices(data_path("hostfile_devices_mlx.json"), &m),
                     TETHER_OK);
    assert_int_equal(m.n, 4);
    for (int i = 0; i < 4; i++)
        assert_null(m.devs[i][i][0]);
    assert_string_equal(m.devs[0][1][0], "rdma_en5");
    assert_null(m.devs[0][1][1]);
    assert_string_equal(m.devs[2][3][0], "rdma_en5");
    tether__device_matrix_free(&m);
    assert_null(m.devs);
}

static void test_devices_lists_and_no_link(void **state)
{
    tether__device_matrix m;

    (void)state;
    assert_int_equal(tether__hostfile_parse_devices("[[null, [\"a\", \"b\"], null],"
                                                    " [[\"c\", \"d\"], null, \"e\"],"
                                                    " [[], \"f\", null]]",
                                                    NULL, &m),
                     TETHER_OK);
    assert_string_equal(m.devs[0][1][1], "b");
    assert_null(m.devs[0][2][0]);
    assert_null(m.devs[2][0][0]);
    assert_string_equal(m.devs[2][1][0], "f");
    tether__device_matrix_free(&m);
    assert_int_equal(tether__hostfile_parse_devices("[[null]]", NULL, &m), TETHER_OK);
    assert_int_equal(m.n, 1);
    tether__device_matrix_free(&m);
}

static void test_hostaddr_parse_direct(void **state)
{
    tether__hostaddr a;

    (void)state;
    assert_int_equal(tether__hostaddr_parse("127.0.0.1:65535", "x", &a), TETHER_OK);
    assert_addr(&a, "127.0.0.1", 65535);
    tether__clear_error();
    expect_error(tether__hostaddr_parse("127.0.0.1:99999", NULL, &a), TETHER_ECONFIG,
                 "address: \"127.0.0.1:99999\" has port 99999; expected 1-65535");
    tether__clear_error();
    expect_error(tether__hostaddr_parse("127.0.0.1:123456", "TETHER_COORDINATOR", &a),
                 TETHER_ECONFIG, "TETHER_COORDINATOR: \"127.0.0.1:123456\" has port \"123456\"");
}

int main(void)
{
    enum { NBAD = sizeof bad_cases / sizeof bad_cases[0] };
    const struct CMUnitTest good[] = {
        cmocka_unit_test(test_ranks_mlx_file),
        cmocka_unit_test(test_ranks_names_and_ipv6),
        cmocka_unit_test(test_ranks_many),
        cmocka_unit_test(test_ranks_write_round_trip),
        cmocka_unit_test(test_ranks_write_rejects_bad_table),
        cmocka_unit_test(test_load_missing_file),
        cmocka_unit_test(test_load_directory),
        cmocka_unit_test(test_load_syntax_position),
        cmocka_unit_test(test_launch_list_form),
        cmocka_unit_test(test_launch_object_form_jaccl),
        cmocka_unit_test(test_launch_object_form_variants),
        cmocka_unit_test(test_launch_write_round_trip),
        cmocka_unit_test(test_devices_mlx_file),
        cmocka_unit_test(test_devices_lists_and_no_link),
        cmocka_unit_test(test_hostaddr_parse_direct),
    };
    struct CMUnitTest bad[NBAD];
    int failed;

    /* One named test per bad input, so a failure says which input. */
    for (int i = 0; i < NBAD; i++) {
        bad[i] = (struct CMUnitTest)cmocka_unit_test_prestate(test_bad_case, NULL);
        bad[i].name = bad_cases[i].label;
        bad[i].initial_state = (void *)&bad_cases[i];
    }
    failed = cmocka_run_group_tests_name("hostfile good forms", good, NULL, NULL);
    failed += _cmocka_run_group_tests("hostfile bad inputs", bad, NBAD, NULL, NULL);
    return failed ? 1 : 0;
}
