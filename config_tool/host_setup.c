/* config_tool/host_setup.c - the commands that give each host its cable addresses, and
 * --auto-setup: run them with sudo -n on every host at once, then check every cable by pinging
 * across it. A command is emitted only when the probe shows its effect missing, so a second run
 * is a no-op. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tool/config_say.h"
#include "config_tool/config_tool.h"
#include "config_tool/host_setup.h"
#include "config_tool/probe_fields.h"
#include "config_tool/ssh_run.h"

#define CT_TB_MTU 65520 /* thunderbolt-net's largest MTU */
#define CT_CMDS_MAX 8192

typedef struct cmdbuf {
    char *buf;
    size_t len, used;
    int n;
} cmdbuf;

static void emit(cmdbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(cmdbuf *b, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (b->used < b->len)
        b->used += (size_t)vsnprintf(b->buf + b->used, b->len - b->used, fmt, ap);
    va_end(ap);
    if (b->used < b->len)
        b->used += (size_t)snprintf(b->buf + b->used, b->len - b->used, "\n");
    b->n++;
}

static const ct_iface *find_iface(const ct_host *x, const char *name)
{
    for (int i = 0; i < x->nifaces; i++)
        if (strcmp(x->ifaces[i].name, name) == 0)
            return &x->ifaces[i];
    return NULL;
}

static int holds(const ct_host *x, const char *iface, uint32_t addr, uint32_t mask)
{
    for (int i = 0; i < x->naddrs; i++)
        if (strcmp(x->addrs[i].iface, iface) == 0 && x->addrs[i].addr == addr &&
            x->addrs[i].mask == mask)
            return 1;
    return 0;
}

static int holds_any(const ct_host *x, const char *iface)
{
    for (int i = 0; i < x->naddrs; i++)
        if (strcmp(x->addrs[i].iface, iface) == 0)
            return 1;
    return 0;
}

/* macOS: out of the Thunderbolt Bridge (it would own the port), the address, a host route so
 * traffic to the peer leaves by this cable. The route goes with the address: both or neither. */
static void macos_cable(const ct_host *x, const char *iface, const char *me, const char *peer,
                        int have, cmdbuf *b)
{
    const ct_iface *f = find_iface(x, iface);

    if (f && f->bridge[0])
        emit(b, "ifconfig %s deletem %s", f->bridge, iface);
    if (have)
        return;
    emit(b, "ifconfig %s inet %s netmask 255.255.255.252 up", iface, me);
    emit(b, "route -n add -host %s -interface %s", peer, iface);
}

/* Linux: link up with the big MTU, then the address (old ones flushed: the cable is ours). */
static void linux_cable(const ct_host *x, const char *iface, const char *me, int have, cmdbuf *b)
{
    const ct_iface *f = find_iface(x, iface);

    if (!f || !f->up || f->mtu != CT_TB_MTU)
        emit(b, "ip link set %s up mtu %d", iface, CT_TB_MTU);
    if (have)
        return;
    if (holds_any(x, iface))
        emit(b, "ip addr flush dev %s", iface);
    emit(b, "ip addr add %s/30 dev %s", me, iface);
}

int ct_setup_commands(const ct_run *run, int h, char *buf, size_t len)
{
    cmdbuf b = {buf, len, 0, 0};
    const ct_host *x = &run->hosts[h];

    buf[0] = '\0';
    for (int c = 0; c < run->topo.ncables; c++) {
        const ct_cable *cb = &run->topo.cables[c];
        const ct_cable_addr *p = &run->plan[c];
        char me[16], peer[16];
        for (int k = 0; k < 2; k++) {
            const char *iface = x->ports[cb->port[k]].iface;
            if (!p->used || cb->host[k] != h)
                continue;
            ct_format_ipv4(p->addr[k], me, sizeof me);
            ct_format_ipv4(p->addr[1 - k], peer, sizeof peer);
            int have = holds(x, iface, p->addr[k], 0xfffffffcu);
            if (x->os == CT_OS_MACOS)
                macos_cable(x, iface, me, peer, have, &b);
            else
                linux_cable(x, iface, me, have, &b);
        }
    }
    return b.n;
}

/* "sh -c 'sudo -n A && sudo -n B'" from one command per line. */
static void sudo_script(const char *cmds, char *out, size_t len)
{
    size_t used = (size_t)snprintf(out, len, "sh -c 'set -e; ");

    for (const char *l = cmds; *l && used < len; l += *l == '\n') {
        int n = (int)strcspn(l, "\n");
        used += (size_t)snprintf(out + used, len - used, "sudo -n %.*s; ", n, l);
        l += n;
    }
    if (used < len)
        snprintf(out + used, len - used, "'");
}

/* One ping per used cable, from its first end, reporting "@@tether ping ADDR ok|fail". */
static void ping_script(const ct_run *run, int h, char *out, size_t len)
{
    const char *flags = run->hosts[h].os == CT_OS_MACOS ? "-c 3 -t 5" : "-c 3 -W 5";
    size_t used = (size_t)snprintf(out, len, "sh -c '");

    for (int c = 0; c < run->topo.ncables && used < len; c++) {
        char peer[16];
        if (!run->plan[c].used || run->topo.cables[c].host[0] != h)
            continue;
        ct_format_ipv4(run->plan[c].addr[1], peer, sizeof peer);
        used += (size_t)snprintf(out + used, len - used,
                                 "if ping %s %s >/dev/null 2>&1; then "
                                 "r=ok; else r=fail; fi; echo \"@@tether ping %s $r\"; ",
                                 flags, peer, peer);
    }
    if (used < len)
        snprintf(out + used, len - used, "true'");
}

/* Run commands[i] on every host that has one; say which failed. 0 when all succeeded. */
static int run_everywhere(ct_run *run, char (*commands)[CT_CMDS_MAX], ct_session *s)
{
    const char *hosts[CT_MAX_HOSTS], *cmds[CT_MAX_HOSTS];
    int idx[CT_MAX_HOSTS], n = 0, failed = 0;

    for (int h = 0; h < run->nhosts; h++)
        if (commands[h][0]) {
            hosts[n] = run->hosts[h].name;
            cmds[n] = commands[h];
            idx[n++] = h;
        }
    if (n == 0)
        return 0;
    if (ct_ssh_run_all(run->opt.ssh_command, hosts, cmds, n, run->opt.timeout_s, s) < 0) {
        ct_say("cannot start %s", run->opt.ssh_command);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char why[512];
        if (s[i].status == 0)
            continue;
        ct_session_error(&s[i], run->opt.timeout_s, why, sizeof why);
        ct_say("%s: setup failed: %s", run->hosts[idx[i]].name, why);
        failed = 1;
    }
    for (int i = 0; i < n; i++)
        ct_session_free(&s[i]);
    return failed ? -1 : 0;
}

static int verify(ct_run *run, char (*scripts)[CT_CMDS_MAX], ct_session *s)
{
    const char *hosts[CT_MAX_HOSTS], *cmds[CT_MAX_HOSTS];
    int n = 0, failed = 0;

    for (int h = 0; h < run->nhosts; h++) {
        ping_script(run, h, scripts[h], CT_CMDS_MAX);
        hosts[n] = run->hosts[h].name;
        cmds[n++] = scripts[h];
    }
    if (ct_ssh_run_all(run->opt.ssh_command, hosts, cmds, n, run->opt.timeout_s, s) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        for (const char *f = s[i].out; (f = strstr(f, "@@tether ping ")); f++) {
            char addr[32], res[8];
            if (sscanf(f, "@@tether ping %31s %7s", addr, res) == 2 && strcmp(res, "ok") != 0) {
                ct_say("%s: no answer from %s across its cable; check the cable and the "
                       "addresses",
                       hosts[i], addr);
                failed = 1;
            }
        }
        ct_session_free(&s[i]);
    }
    return failed ? -1 : 0;
}

int ct_auto_setup(ct_run *run)
{
    char(*scripts)[CT_CMDS_MAX] = calloc(CT_MAX_HOSTS, CT_CMDS_MAX);
    ct_session *s = calloc(CT_MAX_HOSTS, sizeof *s);
    char cmds[CT_CMDS_MAX];
    int rc = 0, changes = 0;

    for (int h = 0; h < run->nhosts && rc == 0; h++)
        if (!run->hosts[h].sudo_ok) {
            ct_say("--auto-setup: %s has no password-less sudo (sudo -n true failed); run the "
                   "commands below by hand",
                   run->hosts[h].name);
            rc = -1;
        }
    if (!scripts || !s)
        rc = -1;
    for (int h = 0; h < run->nhosts && rc == 0; h++) {
        int n = ct_setup_commands(run, h, cmds, sizeof cmds);
        changes += n;
        if (n)
            sudo_script(cmds, scripts[h], CT_CMDS_MAX);
    }
    if (rc == 0 && changes == 0)
        ct_say("every host is set up already: nothing to change");
    if (rc == 0 && changes)
        rc = run_everywhere(run, scripts, s);
    if (rc == 0)
        rc = verify(run, scripts, s);
    if (rc == 0)
        ct_say("every cable answers across its addresses");
    free(scripts);
    free(s);
    return rc;
}
