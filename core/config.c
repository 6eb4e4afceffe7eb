/* core/config.c - reading the settings tether_init needs (core/params.h) into a tether__config. */
#include <stdio.h>
#include <string.h>

#include "algo/select.h"
#include "config.h"
#include "errors.h"
#include "log.h"

static int load_coordinator(tether__config *cfg)
{
    TRY(tether__param_text(TETHER__P_COORDINATOR, &cfg->coordinator));
    if (cfg->coordinator)
        return TETHER_OK;
    /* torchrun's two names, the row's "MASTER_ADDR:MASTER_PORT" alias */
    const char *addr = tether__env_raw(tether__master_addr);
    const char *port = tether__env_raw(tether__master_port);
    if (addr && *addr && port && *port) { /* torchrun's names */
        snprintf(cfg->coordinator_buf, sizeof cfg->coordinator_buf, "%s:%s", addr, port);
        cfg->coordinator = cfg->coordinator_buf;
    }
    return TETHER_OK;
}

static int load_prefixes(tether__config *cfg)
{
    const char *v;
    TRY(tether__param_text(TETHER__P_IFACE_PRIORITY, &v));
    for (const char *p = v; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len > 0) {
            if (cfg->nprefixes == TETHER__MAX_PREFIXES || len >= sizeof cfg->prefixes[0])
                return tether__fail(TETHER_ECONFIG,
                                    "%s: at most %d prefixes of up to %zu characters each",
                                    tether__param_from(TETHER__P_IFACE_PRIORITY),
                                    TETHER__MAX_PREFIXES, sizeof cfg->prefixes[0] - 1);
            memcpy(cfg->prefixes[cfg->nprefixes], p, len);
            cfg->prefixes[cfg->nprefixes++][len] = '\0';
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return TETHER_OK;
}

int tether__config_load(tether__config *cfg)
{
    long rank, size, timeout_s, heartbeat_ms, verbose, spin, deadlock, wire;
    const char *tok;

    tether__params_reload(); /* once per tether_init, whatever the cache holds */
    memset(cfg, 0, sizeof *cfg);
    TRY(tether__param_long(TETHER__P_RANK, &rank)); /* unset: the row's -1 */
    cfg->rank = (int)rank;
    TRY(tether__param_long(TETHER__P_SIZE, &size));
    cfg->size = (int)size;
    TRY(tether__param_text(TETHER__P_HOSTFILE, &cfg->hostfile));
    TRY(tether__param_text(TETHER__P_IBV_DEVICES, &cfg->ibv_devices));
    TRY(load_coordinator(cfg));
    TRY(tether__param_text(TETHER__P_JOB_TOKEN, &tok));
    if (tok && strlen(tok) >= sizeof cfg->job_token)
        return tether__fail(TETHER_ECONFIG, "%s: longer than %zu characters",
                            TETHER__VAR(JOB_TOKEN), sizeof cfg->job_token - 1);
    snprintf(cfg->job_token, sizeof cfg->job_token, "%s", tok ? tok : "");
    TRY(load_prefixes(cfg));
    /* unset: -1, which tether__world_open makes none where the backend sends heartbeats */
    TRY(tether__param_long(TETHER__P_TIMEOUT, &timeout_s));
    cfg->call_timeout_ms = timeout_s < 0 ? -1 : (int)(timeout_s * 1000);
    cfg->timeout_ms = timeout_s > 0 ? cfg->call_timeout_ms : TETHER__DEFAULT_TIMEOUT_S * 1000;
    TRY(tether__param_long(TETHER__P_HEARTBEAT, &heartbeat_ms));
    cfg->heartbeat_ms = (int)heartbeat_ms;
    TRY(tether__param_long(TETHER__P_DEADLOCK, &deadlock));
    cfg->deadlock = (int)deadlock;
    TRY(tether__param_long(TETHER__P_VERBOSE, &verbose));
    cfg->verbose = (int)verbose;
    TRY(tether__param_long(TETHER__P_SPIN_US, &spin));
    cfg->spin_us = (int)spin;
    TRY(tether__param_long(TETHER__P_WIRE_DTYPE, &wire));
    cfg->wire_bf16 = (int)(wire % 2); /* the row's odd words are bfloat16 */
    return tether__algo_settings_check();
}

void tether__config_agreed(const tether__config *cfg, char out[TETHER__AGREED_MAX])
{
    const char *algo, *below; /* checked by tether__config_load */
    tether__param_text(TETHER__P_ALLREDUCE_ALGO, &algo);
    tether__param_text(TETHER__P_TREE_BELOW, &below);
    snprintf(out, TETHER__AGREED_MAX, "wire=%s algo=%.10s tree_below=%.24s heartbeat=%dms",
             cfg->wire_bf16 ? "bf16" : "fp32", algo ? algo : "auto", below ? below : "default",
             cfg->heartbeat_ms);
}

int tether__addr_allowed(const tether__config *cfg, const char *addr)
{
    if (cfg->nprefixes == 0)
        return 1;
    for (int i = 0; i < cfg->nprefixes; i++)
        if (strncmp(addr, cfg->prefixes[i], strlen(cfg->prefixes[i])) == 0)
            return 1;
    return 0;
}
