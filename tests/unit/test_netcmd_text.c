/* tests/unit/test_netcmd_text.c - the macOS command output that `tether check` and `tether
 * config` read (tools/netcmd_text.c), on output in the form macOS prints it (data/macos/):
 * networksetup -listallhardwareports, ifconfig -a; then `tether check`'s interface section built
 * from them, which names a Thunderbolt port left in the Thunderbolt Bridge. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "launcher/check.h"
#include "tests/unit/test_data.h"
#include "tools/netcmd_text.h"

static void lines_are_cut_not_split(void **state)
{
    const char text[] = "one\n\nthree is a long line\nlast without newline";
    char buf[8];
    size_t pos = 0;

    (void)state;
    assert_int_equal(tether__next_line(text, strlen(text), &pos, buf, sizeof buf), 1);
    assert_string_equal(buf, "one");
    assert_int_equal(tether__next_line(text, strlen(text), &pos, buf, sizeof buf), 1);
    assert_string_equal(buf, "");
    assert_int_equal(tether__next_line(text, strlen(text), &pos, buf, sizeof buf), 1);
    assert_string_equal(buf, "three i");
    assert_int_equal(tether__next_line(text, strlen(text), &pos, buf, sizeof buf), 1);
    assert_string_equal(buf, "last wi");
    assert_int_equal(tether__next_line(text, strlen(text), &pos, buf, sizeof buf), 0);
    pos = 0;
    assert_int_equal(tether__next_line("", 0, &pos, buf, sizeof buf), 0);
}

static void hardware_ports(void **state)
{
    static const struct {
        const char *name, *device;
        int receptacle;
    } want[] = {{"Ethernet", "en0", 0},
                {"Wi-Fi", "en1", 0},
                {"Thunderbolt Bridge", "bridge0", 0},
                {"Thunderbolt 1", "en2", 1},
                {"Thunderbolt 2", "en3", 2},
                {"Thunderbolt 3", "en4", 3}};
    char *text = test_data_read("macos/networksetup-listallhardwareports.txt");
    tether__hwport port;
    size_t pos = 0, n = 0;

    (void)state;
    while (tether__hwport_next(text, strlen(text), &pos, &port)) {
        assert_true(n < sizeof want / sizeof want[0]);
        assert_string_equal(port.name, want[n].name);
        assert_string_equal(port.device, want[n].device);
        assert_int_equal(port.receptacle, want[n].receptacle);
        n++;
    }
    assert_int_equal(n, sizeof want / sizeof want[0]); /* "VLAN Configurations" is no port */
    free(text);
}

static void hardware_ports_malformed(void **state)
{
    /* A device before any port, a port without a device, an empty device, a name too long to be
     * an interface, "Thunderbolt 0" and "Thunderbolt 2x": only the last two name interfaces, as no
     * Thunderbolt receptacle. */
    const char text[] =
        "Device: en9\n"
        "Hardware Port: Wi-Fi\n\n"
        "Hardware Port: USB 10/100/1000 LAN\nDevice: \n"
        "Hardware Port: Thunderbolt 4\nDevice: en0123456789012345678901234567890123\n"
        "Hardware Port: Thunderbolt 0\nDevice: en5\n"
        "Hardware Port: Thunderbolt 2x\nDevice: en6";
    tether__hwport port;
    size_t pos = 0;

    (void)state;
    assert_int_equal(tether__hwport_next(text, strlen(text), &pos, &port), 1);
    assert_string_equal(port.device, "en5");
    assert_int_equal(port.receptacle, 0);
    assert_int_equal(tether__hwport_next(text, strlen(text), &pos, &port), 1);
    assert_string_equal(port.device, "en6");
    assert_int_equal(port.receptacle, 0);
    assert_int_equal(tether__hwport_next(text, strlen(text), &pos, &port), 0);
}

static void ifconfig_lines(void **state)
{
    char *text = test_data_read("macos/ifconfig-a.txt");
    char seen[1024] = "", item[96];
    tether__ifc_line l = {0};
    size_t pos = 0;

    (void)state;
    while (tether__ifconfig_next(text, strlen(text), &pos, &l)) {
        if (l.kind == TETHER__IFC_IFACE)
            snprintf(item, sizeof item, "%s%s/%d ", l.iface, l.up ? "+" : "-", l.mtu);
        else if (l.kind == TETHER__IFC_INET)
            snprintf(item, sizeof item, "%s=%08x/%08x ", l.iface, l.addr, l.mask);
        else
            snprintf(item, sizeof item, "%s>%s ", l.iface, l.member);
        strncat(seen, item, sizeof seen - strlen(seen) - 1);
    }
    /* Every interface with its flags and mtu; IPv4 only (no inet6); the bridge's members; the
     * point-to-point "inet A --> P netmask M" of a VPN. */
    assert_string_equal(seen, "lo0+/16384 lo0=7f000001/ff000000 gif0-/1280 stf0-/1280 "
                              "anpi0+/1500 en0+/1500 en0=c0a80117/ffffff00 en1-/1500 en2+/1500 "
                              "en3+/9000 en3=0ad50005/fffffffc en4+/1500 bridge0+/1500 "
                              "bridge0=a9fe2670/ffff0000 bridge0>en2 bridge0>en4 utun0+/1380 "
                              "utun4+/1420 utun4=0a424202/ffffffff ");
    free(text);
}

static void ifconfig_malformed(void **state)
{
    /* Indented lines before any interface, an unindented line that is no interface (whose
     * indented lines then belong to none), an inet without a netmask or with a bad address. */
    const char text[] = "\tinet 10.0.0.1 netmask 0xff000000\n\tmember: en2 flags=3\n"
                        "garbage line\n\tinet 10.0.0.2 netmask 0xff000000\n"
                        "en7: flags=8863<UP> mtu 1500\n\tinet 10.0.0.3\n"
                        "\tinet 10.0.0.300 netmask 0xff000000\n\tinet 10.0.0.4 netmask 0xffffff00\n"
                        "\tmember:\n";
    tether__ifc_line l = {0};
    size_t pos = 0;

    (void)state;
    assert_int_equal(tether__ifconfig_next(text, strlen(text), &pos, &l), 1);
    assert_int_equal(l.kind, TETHER__IFC_IFACE);
    assert_string_equal(l.iface, "en7");
    assert_int_equal(tether__ifconfig_next(text, strlen(text), &pos, &l), 1);
    assert_int_equal(l.kind, TETHER__IFC_INET);
    assert_int_equal(l.addr, 0x0a000004u);
    assert_int_equal(l.mask, 0xffffff00u);
    assert_int_equal(tether__ifconfig_next(text, strlen(text), &pos, &l), 0);
}

/* tether check on a Mac: en2 is Thunderbolt 1 and still in bridge0, which is a problem; en3
 * (Thunderbolt 2, out of the bridge) is fine; bridge0 is no Thunderbolt port itself. */
static void check_marks_thunderbolt_in_bridge(void **state)
{
    char *ports = test_data_read("macos/networksetup-listallhardwareports.txt");
    char *ifc = test_data_read("macos/ifconfig-a.txt");
    tether__hostcheck_addr a[] = {
        {.iface = "lo0", .addr = 0x7f000001, .mask = 0xff000000, .loopback = 1, .up = 1},
        {.iface = "en0", .addr = 0xc0a80117, .mask = 0xffffff00, .up = 1},
        {.iface = "en2", .addr = 0xa9fe0a0a, .mask = 0xffff0000, .up = 1},
        {.iface = "en3", .addr = 0x0ad50005, .mask = 0xfffffffc, .up = 1},
        {.iface = "bridge0", .addr = 0xa9fe2670, .mask = 0xffff0000, .up = 1},
    };
    tether__hostcheck_report r = {0};
    tether__config cfg;

    (void)state;
    memset(&cfg, 0, sizeof cfg);
    tether__hostcheck_macos_ports(a, 5, ports, ifc);
    assert_int_equal(a[0].thunderbolt + a[1].thunderbolt + a[4].thunderbolt, 0);
    assert_int_equal(a[2].thunderbolt, 1);
    assert_int_equal(a[3].thunderbolt, 1);
    assert_string_equal(a[2].master, "bridge0");
    assert_string_equal(a[3].master, "");
    assert_string_equal(a[4].master, "");
    tether__hostcheck_interfaces(&r, &cfg, a, 5);
    assert_non_null(strstr(r.text.s, "  en2            169.254.10.10/16  thunderbolt\n"));
    assert_non_null(strstr(r.text.s, "  en3            10.213.0.5/30  thunderbolt\n"));
    assert_non_null(strstr(r.text.s, "  bridge0        169.254.38.112/16\n"));
    assert_int_equal(r.nproblems, 1);
    assert_string_equal(r.problems.s,
                        "  - en2 is a Thunderbolt interface in bridge bridge0: take it "
                        "out of the bridge and give it its own address\n");
    free(r.text.s);
    free(r.problems.s);

    /* No output from the commands (they failed): nothing is marked. */
    tether__hostcheck_macos_ports(a, 5, "", "");
    assert_int_equal(a[2].thunderbolt, 0);
    assert_string_equal(a[2].master, "");
    free(ports);
    free(ifc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lines_are_cut_not_split),
        cmocka_unit_test(hardware_ports),
        cmocka_unit_test(hardware_ports_malformed),
        cmocka_unit_test(ifconfig_lines),
        cmocka_unit_test(ifconfig_malformed),
        cmocka_unit_test(check_marks_thunderbolt_in_bridge),
    };
    return cmocka_run_group_tests_name("macOS command output", tests, NULL, NULL);
}
