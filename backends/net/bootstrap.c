/* backends/net/bootstrap.c - coordinator bootstrap: register with rank 0, get the table. */
#include "bootstrap.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/errors.h"
#include "core/log.h"
#include "core/params.h"
#include "core/wire.h"
#include "setup.h"
#include "token.h"

/* A table larger than this is not one we sent: 1 << 20 ranks would not fit in a hello anyway. */
#define TABLE_MAX (16u << 20)

static int table_alloc(tether__rank_hosts *t, int n)
{
    memset(t, 0, sizeof *t);
    t->nranks = n;
    t->naddrs = calloc((size_t)n, sizeof *t->naddrs);
    t->addrs = calloc((size_t)n, sizeof *t->addrs);
    for (int r = 0; t->naddrs && t->addrs && r < n; r++) {
        if (!(t->addrs[r] = calloc(1, sizeof **t->addrs)))
            break;
        t->naddrs[r] = 1;
    }
    if (!t->naddrs || !t->addrs || (n > 0 && !t->addrs[n - 1])) {
        tether__rank_hosts_free(t);
        return tether__fail(TETHER_ENOMEM, "out of memory for a table of %d ranks", n);
    }
    return TETHER_OK;
}

/* Wire form: u32 total length, u32 count, then per rank u32 port, u32 host length, host bytes. */
static unsigned char *table_encode(const tether__rank_hosts *t, uint32_t *len)
{
    size_t n = 8;
    for (int r = 0; r < t->nranks; r++)
        n += 8 + strlen(t->addrs[r][0].host);
    unsigned char *buf = malloc(n), *p = buf + 8;
    if (!buf)
        return NULL;
    tether__put_u32(buf, (uint32_t)n);
    tether__put_u32(buf + 4, (uint32_t)t->nranks);
    for (int r = 0; r < t->nranks; r++) {
        size_t hl = strlen(t->addrs[r][0].host);
        tether__put_u32(p, (uint32_t)t->addrs[r][0].port);
        tether__put_u32(p + 4, (uint32_t)hl);
        memcpy(p + 8, t->addrs[r][0].host, hl);
        p += 8 + hl;
    }
    *len = (uint32_t)n;
    return buf;
}

static int table_decode(const unsigned char *buf, uint32_t len, int size, tether__rank_hosts *t)
{
    const unsigned char *p = buf + 8, *end = buf + len;
    if ((int)tether__get_u32(buf + 4) != size)
        return tether__fail(TETHER_EPEER, "the coordinator sent a table of %u ranks, %s is %d",
                            tether__get_u32(buf + 4), TETHER__VAR(SIZE), size);
    TRY(table_alloc(t, size));
    for (int r = 0; r < size; r++) {
        uint32_t hl = end - p >= 8 ? tether__get_u32(p + 4) : UINT32_MAX;
        if (hl >= TETHER__HOST_MAX || (size_t)(end - p) < 8 + (size_t)hl) {
            tether__rank_hosts_free(t);
            return tether__fail(TETHER_EPEER, "the coordinator sent a malformed table (rank %d)",
                                r);
        }
        t->addrs[r][0].port = (int)tether__get_u32(p);
        memcpy(t->addrs[r][0].host, p + 8, hl);
        p += 8 + hl;
    }
    return TETHER_OK;
}

static int check_env(const tether__config *cfg)
{
    if (cfg->size < 1)
        return tether__fail(TETHER_ECONFIG,
                            "%s=%s is set but %s "
                            "is not: the coordinator bootstrap needs the number of ranks",
                            TETHER__VAR(COORDINATOR), cfg->coordinator, TETHER__VARS(SIZE));
    if (cfg->rank < 0 || cfg->rank >= cfg->size)
        return tether__fail(TETHER_ECONFIG, "%s is %s%d: with %s=%d it must be 0 to %d",
                            TETHER__VARS(RANK), cfg->rank < 0 ? "unset, " : "", cfg->rank,
                            TETHER__VAR(SIZE), cfg->size, cfg->size - 1);
    return TETHER_OK;
}

/* Rank 0: accept every other rank on the coordinator address, then send each the table. */
static int serve(const tether__config *cfg, const tether__hostaddr *coord, tether__rank_hosts *t)
{
    int n = cfg->size, boot_fd = -1, port, rc;
    tether__net_plan plan;
    tether__net_links links = {0};
    unsigned char *wire = NULL;
    uint32_t len;
    int64_t deadline = tether__net_now_ms() + cfg->timeout_ms;
    TRY(tether__net_plan_init(&plan, 0, n, cfg));
    for (int r = 1; r < n; r++)
        plan.in_links[r] = 1;
    TRY_GOTO(rc, tether__net_listen(coord->host, coord->port, &boot_fd, &port), done);
    plan.nlisten = 1;
    plan.listen_fds = &boot_fd;
    TRY_GOTO(rc, tether__net_setup(&plan, &links), done);
    for (int r = 1; r < n; r++) {
        const tether__hostaddr *a = &links.announced[r];
        if (a->port < 1 || a->port > 65535 || !a->host[0]) {
            rc = tether__fail(TETHER_EPEER,
                              "rank %d registered no listen address with the "
                              "coordinator",
                              r);
            goto done;
        }
        t->addrs[r][0] = *a;
    }
    if (!(wire = table_encode(t, &len))) {
        rc = tether__fail(TETHER_ENOMEM, "out of memory for the table of %d ranks", n);
        goto done;
    }
    for (int r = 1; r < n && rc == TETHER_OK; r++)
        rc = tether__net_write_all(links.fds[r][0], wire, len, deadline, links.addr[r]);
    TLOG_INFO("coordinator %s:%d: sent the table of %d ranks", coord->host, coord->port, n);
done:
    if (boot_fd >= 0)
        close(boot_fd);
    if (links.fds)
        tether__net_links_free(&links);
    tether__net_plan_free(&plan);
    free(wire);
    return rc;
}

/* Rank r > 0: register with the coordinator and read the table. */
static int join(const tether__config *cfg, const tether__hostaddr *coord,
                const tether__hostaddr *self, tether__rank_hosts *t)
{
    tether__net_plan plan;
    tether__net_links links = {0};
    unsigned char head[8], *wire = NULL;
    int64_t deadline = tether__net_now_ms() + cfg->timeout_ms;
    int rc;
    TRY(tether__net_plan_init(&plan, cfg->rank, cfg->size, cfg));
    plan.out_links[0] = 1;
    plan.announce_host = self->host;
    plan.announce_port = self->port;
    TRY_GOTO(rc, tether__net_plan_add_addr(&plan, 0, coord), done);
    TRY_GOTO(rc, tether__net_setup(&plan, &links), done);
    int fd = links.fds[0][0];
    TRY_GOTO(rc, tether__net_read_all(fd, head, sizeof head, deadline, links.addr[0]), done);
    uint32_t len = tether__get_u32(head);
    if (len < 8 || len > TABLE_MAX || !(wire = malloc(len))) {
        rc = tether__fail(len < 8 || len > TABLE_MAX ? TETHER_EPEER : TETHER_ENOMEM,
                          "the coordinator %s announced a table of %u bytes", links.addr[0], len);
        goto done;
    }
    memcpy(wire, head, sizeof head);
    TRY_GOTO(rc, tether__net_read_all(fd, wire + 8, len - 8, deadline, links.addr[0]), done);
    rc = table_decode(wire, len, cfg->size, t);
done:
    if (links.fds)
        tether__net_links_free(&links);
    tether__net_plan_free(&plan);
    free(wire);
    return rc;
}

int tether__net_bootstrap(const tether__config *cfg, tether__rank_hosts *table, int *listen_fd)
{
    tether__hostaddr coord, self;
    int rc;
    memset(table, 0, sizeof *table);
    TRY(tether__hostaddr_parse(cfg->coordinator, TETHER__VAR(COORDINATOR), &coord));
    TRY(check_env(cfg));
    tether__net_token_warn_unset(cfg);
    TRY(tether__net_route_addr(coord.host, coord.port, self.host, sizeof self.host));
    if (!tether__addr_allowed(cfg, self.host))
        return tether__fail(TETHER_ECONFIG,
                            "rank %d: %s, the local address that reaches the coordinator "
                            "%s, does not match %s",
                            cfg->rank, self.host, cfg->coordinator, TETHER__VAR(IFACE_PRIORITY));
    TRY(tether__net_listen(self.host, 0, listen_fd, &self.port));
    if (cfg->rank == 0) {
        TRY_GOTO(rc, table_alloc(table, cfg->size), fail);
        table->addrs[0][0] = self;
        TRY_GOTO(rc, serve(cfg, &coord, table), fail);
    } else {
        TRY_GOTO(rc, join(cfg, &coord, &self, table), fail);
    }
    return TETHER_OK;
fail:
    tether__rank_hosts_free(table);
    close(*listen_fd);
    *listen_fd = -1;
    return rc;
}
