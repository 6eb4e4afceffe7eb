/* core/config.c - reading the variables of the table (core/env.c) into a tether_config, and
 * checking their values. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/select.h"
#include "config.h"
#include "errors.h"
#include "log.h"

int tether__plain_decimal(const char *v, int fraction)
{
    const char *p = v + (*v == '-');
    size_t digits = strspn(p, "0123456789");
    if (!digits)
        return 0;
    p += digits;
    if (fraction && *p == '.') {
        digits = strspn(p + 1, "0123456789");
        if (!digits)
            return 0;
        p += 1 + digits;
    }
    return *p == '\0';
}

static int parse_long(const char *name, const char *v, long min, long max, long *out)
{
    int plain = tether__plain_decimal(v, 0);
    errno = 0;
    long x = plain ? strtol(v, NULL, 10) : 0;
    if (!plain || errno || x < min || x > max)
        return tether__fail(TETHER_ECONFIG,
                            "%s=\"%s\": expected a whole number from %ld to %ld, in plain decimal "
                            "digits",
                            name, v, min, max);
    *out = x;
    return TETHER_OK;
}

int tether__env_long(const char *name, long def, long min, long max, long *out)
{
    const char *v = tether__env(name, NULL);
    if (!v) {
        *out = def;
        return TETHER_OK;
    }
    return parse_long(name, v, min, max, out);
}

/* An int from name or the first of its fallbacks set, the name it came from kept for messages;
 * *out unchanged when none is set. */
static int env_int(const char *name, long min, long max, int *out)
{
    char used[64];
    const char *v = tether__env_from(name, used);
    long x = 0;
    if (!v)
        return TETHER_OK;
    TRY(parse_long(used, v, min, max, &x));
    *out = (int)x;
    return TETHER_OK;
}

static int load_coordinator(tether_config *cfg)
{
    cfg->coordinator = tether__env("TETHER_COORDINATOR", NULL);
    if (cfg->coordinator)
        return TETHER_OK;
    const char *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
    if (addr && *addr && port && *port) { /* torchrun's names */
        snprintf(cfg->coordinator_buf, sizeof cfg->coordinator_buf, "%s:%s", addr, port);
        cfg->coordinator = cfg->coordinator_buf;
    }
    return TETHER_OK;
}

static int load_prefixes(tether_config *cfg)
{
    const char *v = tether__env("TETHER_IFACE_PRIORITY", NULL);
    for (const char *p = v; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len > 0) {
            if (cfg->nprefixes == TETHER_MAX_PREFIXES || len >= sizeof cfg->prefixes[0])
                return tether__fail(TETHER_ECONFIG,
                                    "TETHER_IFACE_PRIORITY: at most %d prefixes of up to %zu "
                                    "characters each",
                                    TETHER_MAX_PREFIXES, sizeof cfg->prefixes[0] - 1);
            memcpy(cfg->prefixes[cfg->nprefixes], p, len);
            cfg->prefixes[cfg->nprefixes++][len] = '\0';
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return TETHER_OK;
}

/* TETHER_HEARTBEAT: seconds, a fraction allowed ("0.2"), from 0.05 to an hour. */
static int load_heartbeat(tether_config *cfg)
{
    const char *v = tether__env("TETHER_HEARTBEAT", NULL);
    double s = 1.0;
    if (v) {
        s = tether__plain_decimal(v, 1) ? strtod(v, NULL) : 0;
        if (!(s >= 0.05 && s <= 3600))
            return tether__fail(TETHER_ECONFIG,
                                "TETHER_HEARTBEAT=\"%s\": expected seconds from 0.05 to 3600, in "
                                "plain decimal (e.g. 1 or 0.5)",
                                v);
    }
    cfg->heartbeat_ms = (int)(s * 1000 + 0.5);
    return TETHER_OK;
}

int tether__config_load(tether_config *cfg)
{
    long timeout_s, verbose, spin, deadlock;

    memset(cfg, 0, sizeof *cfg);
    cfg->rank = -1;
    cfg->size = -1;
    TRY(env_int("TETHER_RANK", 0, 1 << 20, &cfg->rank));
    TRY(env_int("TETHER_SIZE", 1, 1 << 20, &cfg->size));
    cfg->hostfile = tether__env("TETHER_HOSTFILE", NULL);
    cfg->ibv_devices = tether__env("TETHER_IBV_DEVICES", NULL);
    TRY(load_coordinator(cfg));
    const char *tok = tether__env("TETHER_JOB_TOKEN", NULL);
    if (tok && strlen(tok) >= sizeof cfg->job_token)
        return tether__fail(TETHER_ECONFIG, "TETHER_JOB_TOKEN: longer than %zu characters",
                            sizeof cfg->job_token - 1);
    snprintf(cfg->job_token, sizeof cfg->job_token, "%s", tok ? tok : "");
    TRY(load_prefixes(cfg));
    /* unset: -1, which tether__world_open makes none where the backend sends heartbeats */
    TRY(tether__env_long("TETHER_TIMEOUT", -1, 0, 86400 * 7, &timeout_s));
    cfg->call_timeout_ms = timeout_s < 0 ? -1 : (int)(timeout_s * 1000);
    cfg->timeout_ms = timeout_s > 0 ? cfg->call_timeout_ms : TETHER_DEFAULT_TIMEOUT_S * 1000;
    TRY(load_heartbeat(cfg));
    TRY(tether__env_long("TETHER_DEADLOCK", 1, 0, 1, &deadlock));
    cfg->deadlock = (int)deadlock;
    TRY(tether__env_long("TETHER_VERBOSE", 0, 0, 9, &verbose));
    cfg->verbose = (int)verbose;
    TRY(tether__env_long("TETHER_SPIN_US", 50, 0, 1000000, &spin));
    cfg->spin_us = (int)spin;
    const char *wire = tether__env("TETHER_WIRE_DTYPE", NULL);
    if (wire && strcmp(wire, "bf16") && strcmp(wire, "bfloat16") && strcmp(wire, "fp32") &&
        strcmp(wire, "float32"))
        return tether__fail(TETHER_ECONFIG, "TETHER_WIRE_DTYPE=\"%s\": expected bf16 or fp32",
                            wire);
    cfg->wire_bf16 = wire && (!strcmp(wire, "bf16") || !strcmp(wire, "bfloat16"));
    return tether__algo_settings_check();
}

void tether__config_agreed(const tether_config *cfg, char out[TETHER_AGREED_MAX])
{
    const char *algo = tether__env("TETHER_ALLREDUCE_ALGO", NULL);
    const char *below = tether__env("TETHER_TREE_BELOW", NULL);
    snprintf(out, TETHER_AGREED_MAX, "wire=%s algo=%.10s tree_below=%.24s heartbeat=%dms",
             cfg->wire_bf16 ? "bf16" : "fp32", algo ? algo : "auto", below ? below : "default",
             cfg->heartbeat_ms);
}

int tether__addr_allowed(const tether_config *cfg, const char *addr)
{
    if (cfg->nprefixes == 0)
        return 1;
    for (int i = 0; i < cfg->nprefixes; i++)
        if (strncmp(addr, cfg->prefixes[i], strlen(cfg->prefixes[i])) == 0)
            return 1;
    return 0;
}
