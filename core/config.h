/* core/config.h - the settings tether_init needs, read through the parameter table (core/params.h)
 * into a tether__config for the backends. */
#ifndef TETHER_CORE_CONFIG_H
#define TETHER_CORE_CONFIG_H

#include <stddef.h>

#include "params.h"

#define TETHER__TOKEN_MAX 128
#define TETHER__AGREED_MAX 96
#define TETHER__MAX_PREFIXES 16
#define TETHER__DEFAULT_TIMEOUT_S 120 /* forming the world; a call where no heartbeats run */
#define TETHER__HEARTBEATS_MISSED 3   /* a peer silent for this many heartbeats is gone */

typedef struct tether__config {
    int rank;                /* TETHER_RANK / MLX_RANK / RANK; -1 when unset */
    int size;                /* TETHER_SIZE / WORLD_SIZE; -1 when unset */
    const char *hostfile;    /* TETHER_HOSTFILE / MLX_HOSTFILE; NULL when unset */
    const char *coordinator; /* TETHER_COORDINATOR, or MASTER_ADDR:MASTER_PORT; NULL when unset */
    char coordinator_buf[300];
    const char *ibv_devices;           /* TETHER_IBV_DEVICES / MLX_IBV_DEVICES; NULL when unset */
    char job_token[TETHER__TOKEN_MAX]; /* TETHER_JOB_TOKEN; "" when unset */
    int nprefixes;                     /* TETHER_IFACE_PRIORITY, split at commas; 0 = no filter */
    char prefixes[TETHER__MAX_PREFIXES][64];
    int timeout_ms;      /* forming the world: TETHER_TIMEOUT s, or the default when that is 0 */
    int call_timeout_ms; /* a call without progress: TETHER_TIMEOUT s; 0 = none (heartbeats);
                            -1 = unset: none, or the default where the backend has no heartbeats */
    int deadlock;        /* TETHER_DEADLOCK: the wait-state verdicts (core/waitstate.h) */
    int heartbeat_ms;    /* TETHER_HEARTBEAT: period of the liveness heartbeats; default 1 s */
    int verbose;         /* TETHER_VERBOSE */
    int wire_bf16;       /* TETHER_WIRE_DTYPE=bf16: float32 all-reduce travels as bfloat16 */
    int spin_us;         /* TETHER_SPIN_US: how long a wait may spin before it sleeps */
} tether__config;

/* Read the environment. TETHER_ECONFIG naming the variable when a value is malformed. */
int tether__config_load(tether__config *cfg);

/* TETHER_ECONFIG naming the variables set and what is missing when the environment announces a
 * job of several ranks (rank or size variables) with no hostfile and no coordinator to reach them;
 * tether_init checks it before it would form a group of size 1 (core/job_env.c). */
int tether__config_job_check(const tether__config *cfg);

/* The settings every rank must share, as text for the handshake to compare and name: those that
 * go into a collective's signature (TETHER_WIRE_DTYPE, TETHER_ALLREDUCE_ALGO, TETHER_TREE_BELOW),
 * so ranks that differ fail at init naming both values rather than at their first call. */
void tether__config_agreed(const tether__config *cfg, char out[TETHER__AGREED_MAX]);

/* 1 if addr (dotted IPv4 or a host name) passes TETHER_IFACE_PRIORITY (always 1 without it). */
int tether__addr_allowed(const tether__config *cfg, const char *addr);

#endif
