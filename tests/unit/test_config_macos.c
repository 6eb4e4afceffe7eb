/* tests/unit/test_config_macos.c - `tether config` reading a Mac's routing table (netstat -rn -f
 * inet, in both the layout of macOS 11.3 and later and the older one with Refs and Use, from
 * data/macos/), Darwin's abbreviated destinations, and the address plan around routes: around
 * a routed /24, past a VPN's 0/1 and 128.0/1, and on to the fallback pools when routes fill the
 * default one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config_tool/addr_plan.h"
#include "config_tool/config_tool.h"
#include "config_tool/macos.h"
#include "config_tool/probe_fields.h"
#include "config_tool/probe_parse.h"
#include "tests/unit/test_data.h"

static void destinations(void **state)
{
    static const struct {
        const char *dst;
        int host;
        uint32_t net, mask;
    } good[] = {
        {"10.8/16", 0, 0x0a080000, 0xffff0000},
        {"192.168.50", 0, 0xc0a83200, 0xffffff00},
        {"192.168.50.0/24", 0, 0xc0a83200, 0xffffff00},
        {"10.9.9.9", 1, 0x0a090909, 0xffffffff},
        {"10.9.9.9", 0, 0x0a090909, 0xffffffff},
        {"127", 0, 0x7f000000, 0xff000000},
        {"169.254", 0, 0xa9fe0000, 0xffff0000},
        {"172.16.111/24", 0, 0xac106f00, 0xffffff00},
        {"192.168.0", 0, 0xc0a80000, 0xffffff00},
        {"192.168.200/22", 0, 0xc0a8c800, 0xfffffc00},
        {"224.0.0/4", 0, 0xe0000000, 0xf0000000},
        {"0/1", 0, 0, 0x80000000},
        {"128.0/1", 0, 0x80000000, 0x80000000},
        {"10", 0, 0x0a000000, 0xff000000},
        {"10.8", 0, 0x0a080000, 0xffff0000},
        {"255.255.255.255/32", 0, 0xffffffff, 0xffffffff},
        {"10.1&0xffff00ff", 0, 0x0a010000, 0xffff00ff},
    };
    static const char *const bad[] = {
        "",      "default", "fe80::1%lo0", "::1",       "1.2.3.4.5", "256.1",           "10.8/8",
        "10/33", "10./8",   "10.8/",       "-1",        "+10",       "10.8/16x",        " 10",
        "1234",  "10..8",   "10&0x",       "10.1&0xff", "link#4",    "a4:2b:b0:e1:7:3a"};
    uint32_t net, mask;

    (void)state;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        net = mask = 1;
        if (ct_parse_bsd_dest(good[i].dst, good[i].host, &net, &mask) != 0)
            fail_msg("%s: not read", good[i].dst);
        if (net != good[i].net || mask != good[i].mask)
            fail_msg("%s: %08x/%08x, expected %08x/%08x", good[i].dst, net, mask, good[i].net,
                     good[i].mask);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ct_parse_bsd_dest(bad[i], 0, &net, &mask) == 0)
            fail_msg("\"%s\" read as %08x/%08x", bad[i], net, mask);
}

/* A whole macOS probe answer, as the probe script prints it, with netstat's text. */
static char *probe_output(const char *netstat)
{
    static const char head[] =
        "@@tether uname\nDarwin\n@@tether version\n26.2\n@@tether model\nMac15,14\n"
        "@@tether thunderbolt\n{\"SPThunderboltDataType\": []}\n"
        "@@tether ports\nHardware Port: Ethernet\nDevice: en0\n"
        "@@tether ifconfig\nen0: flags=8863<UP,BROADCAST> mtu 1500\n"
        "\tinet 192.168.1.23 netmask 0xffffff00 broadcast 192.168.1.255\n"
        "@@tether netstat\n";
    static const char tail[] = "\n@@tether sudo\nyes\n@@tether end\n";
    char *out = malloc(sizeof head + strlen(netstat) + sizeof tail);

    assert_non_null(out);
    sprintf(out, "%s%s%s", head, netstat, tail);
    return out;
}

/* h's routes as "IFACE NET/BITS" lines. */
static void routes_text(const ct_host *h, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < h->nroutes && used < len; i++) {
        char a[16];
        ct_format_ipv4(h->routes[i].addr, a, sizeof a);
        used += (size_t)snprintf(buf + used, len - used, "%s %s/%d\n", h->routes[i].iface, a,
                                 ct_mask_bits(h->routes[i].mask));
    }
}

/* The routes ct_probe_parse reads from a probe answer with this netstat text, as "IFACE NET/BITS"
 * lines. */
static void routes_of(const char *netstat, char *got, size_t len)
{
    char *out = probe_output(netstat);
    ct_host *h = calloc(1, sizeof *h);

    assert_non_null(h);
    assert_int_equal(ct_probe_parse(h, out), 0);
    routes_text(h, got, len);
    free(out);
    free(h);
}

/* Both layouts of the table: macOS 11.3 and later, and before it with Refs and Use between Flags
 * and Netif (the header says where the interface is). Left out: the default routes, the routes
 * cloned from another (flag W: ARP entries, the multicast groups) and Internet6. */
static void routing_tables(void **state)
{
    static const struct {
        const char *file, *routes;
    } tables[] = {
        {"macos/netstat-rn-f-inet.txt",
         "utun4 0.0.0.0/1\nutun4 10.8.0.0/16\nutun4 10.9.9.9/32\nutun4 10.66.66.2/32\n"
         "en3 10.213.0.4/30\nlo0 127.0.0.0/8\nlo0 127.0.0.1/32\nutun4 128.0.0.0/1\n"
         "bridge0 169.254.0.0/16\nen0 172.16.111.0/24\nen0 192.168.1.0/24\nen0 192.168.1.1/32\n"
         "en0 192.168.1.23/32\nen0 192.168.50.0/24\nen0 192.168.60.0/24\nen0 224.0.0.0/4\n"
         "en0 255.255.255.255/32\n"},
        {"macos/netstat-rn-f-inet-refs-use.txt",
         "en0 10.20.30.0/24\nen0 10.20.30.1/32\nlo0 127.0.0.0/8\nlo0 127.0.0.1/32\n"
         "en0 172.20.0.0/16\nvmnet8 192.168.220.0/24\n"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        char *text = test_data_read(tables[i].file), got[4096];
        routes_of(text, got, sizeof got);
        if (strcmp(got, tables[i].routes) != 0)
            fail_msg("%s: routes\n%sexpected\n%s", tables[i].file, got, tables[i].routes);
        free(text);
    }
}

static void routing_table_malformed(void **state)
{
    /* Rows before the header, rows too short, bad destinations, IPv6 rows, a header with no Netif
     * column (whose rows say nothing), a line far longer than any: none crashes or is read. */
    char longline[2000], text[4096], got[256], *out;
    ct_host *h = calloc(1, sizeof *h);

    (void)state;
    assert_non_null(h);
    memset(longline, '7', sizeof longline - 1);
    longline[sizeof longline - 1] = '\0';
    snprintf(text, sizeof text,
             "10.1/16 192.168.1.1 UGSc en0\n"
             "Routing tables\nInternet:\n"
             "Destination Gateway Flags\n10.2/16 192.168.1.1 UGSc en0\n"
             "Destination        Gateway            Flags               Netif Expire\n"
             "10.3/16\n10.4/16 192.168.1.1\n10.5/16 192.168.1.1 UGSc\n"
             "300.1 192.168.1.1 UGSc en0\n10.6/40 192.168.1.1 UGSc en0\n"
             "fe80::%%lo0/64 fe80::1%%lo0 UcI lo0\n%s\n"
             "10.7/16 192.168.1.1 UGSc en0\n",
             longline);
    routes_of(text, got, sizeof got);
    assert_string_equal(got, "en0 10.7.0.0/16\n");

    /* A probe without the netstat part is refused, as one without ifconfig is. */
    out = probe_output("");
    memcpy(strstr(out, "@@tether netstat"), "@@tether netstax", 16);
    assert_int_equal(ct_probe_parse(h, out), -1);
    assert_non_null(strstr(h->error, "netstat"));
    free(out);
    free(h);
}

/* Two hosts, one cable between their en2, the pools as without --subnet. */
static ct_run *one_cable(void)
{
    static const char *const pools[] = {CT_DEFAULT_POOL, CT_FALLBACK_POOL_1, CT_FALLBACK_POOL_2};
    ct_run *run = calloc(1, sizeof *run);

    assert_non_null(run);
    run->nhosts = 2;
    for (int h = 0; h < 2; h++) {
        snprintf(run->hosts[h].name, sizeof run->hosts[h].name, "mac%d", h + 1);
        run->hosts[h].nports = 1;
        snprintf(run->hosts[h].ports[0].iface, CT_IF_MAX, "en2");
    }
    run->topo.ncables = 1;
    run->topo.cables[0].host[1] = 1;
    run->plan[0].used = 1;
    for (int p = 0; p < CT_MAX_POOLS; p++)
        assert_int_equal(ct_parse_cidr(pools[p], &run->opt.pools[p].net, &run->opt.pools[p].mask),
                         0);
    run->opt.npools = CT_MAX_POOLS;
    return run;
}

static void route(ct_run *run, int h, const char *iface, const char *dst)
{
    uint32_t net, mask;

    assert_int_equal(ct_parse_bsd_dest(dst, 0, &net, &mask), 0);
    assert_int_equal(
        ct_add_net(run->hosts[h].routes, &run->hosts[h].nroutes, CT_MAX_ROUTES, iface, net, mask),
        0);
}

static void plan_net(ct_run *run, const char *want)
{
    char got[16];

    ct_format_ipv4(run->plan[0].net, got, sizeof got);
    assert_string_equal(got, want);
}

static void plan_around_routes(void **state)
{
    ct_run *run = one_cable();

    (void)state;
    /* A VPN taking all traffic in halves blocks nothing; a lab /24 and a host route do. */
    route(run, 0, "utun4", "0/1");
    route(run, 0, "utun4", "128.0/1");
    route(run, 0, "en0", "192.168.200");
    route(run, 1, "en0", "192.168.201.1/32");
    route(run, 1, "en2", "192.168.201.4/30"); /* on the cable itself: replaced, blocks nothing */
    assert_int_equal(ct_plan_addresses(run), 0);
    plan_net(run, "192.168.201.4");

    /* The default pool routed whole, and all of 10/8 through a VPN: the second fallback. */
    route(run, 1, "en0", "192.168.200/22");
    route(run, 0, "utun4", "10");
    assert_int_equal(ct_plan_addresses(run), 0);
    plan_net(run, "172.27.0.0");

    /* Every pool routed: no plan. */
    route(run, 0, "utun4", "172.16/12");
    assert_int_equal(ct_plan_addresses(run), -1);
    free(run);
}

static void plan_with_subnet_stays_in_it(void **state)
{
    ct_run *run = one_cable();

    (void)state;
    run->opt.npools = 1; /* --subnet 192.168.200.0/22 */
    route(run, 1, "en0", "192.168.200/22");
    assert_int_equal(ct_plan_addresses(run), -1);
    assert_int_equal(run->plan[0].net, 0);

    /* A second run keeps what the first set up from a fallback. */
    run->opt.npools = CT_MAX_POOLS;
    for (int h = 0; h < 2; h++)
        assert_int_equal(ct_add_net(run->hosts[h].addrs, &run->hosts[h].naddrs, CT_MAX_ADDRS, "en2",
                                    0x0ad50001u + (uint32_t)h, 0xfffffffcu),
                         0);
    assert_int_equal(ct_plan_addresses(run), 0);
    plan_net(run, "10.213.0.0");
    assert_int_equal(run->plan[0].reused, 1);
    free(run);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(destinations),
        cmocka_unit_test(routing_tables),
        cmocka_unit_test(routing_table_malformed),
        cmocka_unit_test(plan_around_routes),
        cmocka_unit_test(plan_with_subnet_stays_in_it),
    };
    return cmocka_run_group_tests_name("tether config on macOS", tests, NULL, NULL);
}
