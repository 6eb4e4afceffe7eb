/* core/config.c - the table of every TETHER_* variable, and reading them into a tether_config. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/select.h"
#include "config.h"
#include "errors.h"
#include "log.h"

/* Every TETHER_* variable of the tree, with its fallbacks, default and reader: libtether's first
 * (tether__env reads no others), then those the Python package, scripts and tests read. docs/env.md
 * and `tether check` follow this table; tests/docs/env_names.py fails on a TETHER_* name in the
 * sources that it lacks. */
const tether_env_var tether__env_table[] = {
    {"TETHER_BACKEND", "", "any",
     "backend when tether_init is given \"any\": mpi, ring, mesh, rdma, singleton",
     TETHER_READ_LIB},
    {"TETHER_RANK", "MLX_RANK, RANK", "", "this process's rank", TETHER_READ_LIB},
    {"TETHER_SIZE", "MLX_WORLD_SIZE, WORLD_SIZE", "",
     "number of ranks (coordinator bootstrap; rdma takes it from the device matrix)",
     TETHER_READ_LIB},
    {"TETHER_HOSTFILE", "MLX_HOSTFILE", "",
     "per-rank hostfile: JSON list of [\"ip:port\", ...] per rank", TETHER_READ_LIB},
    {"TETHER_COORDINATOR", "MLX_JACCL_COORDINATOR, MASTER_ADDR:MASTER_PORT", "",
     "host:port of rank 0 for bootstrap without a hostfile", TETHER_READ_LIB},
    {"TETHER_JOB_TOKEN", "", "derived from the hostfile's ranks",
     "secret every connection must present (set by tether launch)", TETHER_READ_LIB},
    {"TETHER_IFACE_PRIORITY", "MCCL_IFACE_PRIORITY", "",
     "comma-separated address prefixes: the only addresses used", TETHER_READ_LIB},
    {"TETHER_TIMEOUT", "", "none for calls; 120 to form the group",
     "optional bound: seconds in which no request finishes and no data moves before "
     "TETHER_ETIMEDOUT; unset or 0: a call waits as long as its peers answer heartbeats and are "
     "not deadlocked (the MPI backend, which sends none: 120)",
     TETHER_READ_LIB},
    {"TETHER_HEARTBEAT", "", "1",
     "seconds between heartbeats; a peer silent for 3 of them is stopped, hung or unreachable",
     TETHER_READ_LIB},
    {"TETHER_DEADLOCK", "", "1",
     "0: no deadlock verdicts (a rank that waits in one thread while another of its threads will "
     "send later); 1: ranks waiting on each other with nothing moving for 2 heartbeats fail with "
     "TETHER_EDEADLOCK, and a wait on a rank that failed its last call fails with TETHER_EPEER",
     TETHER_READ_LIB},
    {"TETHER_VERBOSE", "MLX_RING_VERBOSE", "0",
     "1: connections and algorithm choices on stderr; 2: trace", TETHER_READ_LIB},
    {"TETHER_ALLREDUCE_ALGO", "MCCL_ALLREDUCE_ALGO", "auto",
     "auto, ring, tree, butterfly, direct or neighbor", TETHER_READ_LIB},
    {"TETHER_TREE_BELOW", "MCCL_TREE_BELOW", "32768; 2097152 for broadcast",
     "bytes under which all-reduce and broadcast use the latency algorithm", TETHER_READ_LIB},
    {"TETHER_WIRE_DTYPE", "MCCL_WIRE_DTYPE", "",
     "bf16: float32 all-reduce payloads travel as bfloat16", TETHER_READ_LIB},
    {"TETHER_SPIN_US", "", "50",
     "cap of the adaptive spin budget (microseconds) before a wait sleeps", TETHER_READ_LIB},
    {"TETHER_TCP_MAX_IO", "", "1073741824",
     "largest single send/recv of the TCP backends in bytes (64 .. 1 GiB); lowered by tests",
     TETHER_READ_LIB},
    {"TETHER_TCP_CONGESTION", "", "",
     "Linux: TCP congestion control of tether's connections (e.g. cubic); unset: Reno within "
     "one host, the system's between hosts",
     TETHER_READ_LIB},
    {"TETHER_TCP_CMA_MIN", "", "262144",
     "Linux: bytes from which a message between ranks of one host is read from the sender's "
     "memory (process_vm_readv) instead of the socket; 0 turns it off",
     TETHER_READ_LIB},
    {"TETHER_IBV_DEVICES", "MLX_IBV_DEVICES", "", "RDMA device matrix file (N x N)",
     TETHER_READ_LIB},
    {"TETHER_RDMA_QP", "", "uc on macOS, rc on Linux", "RDMA queue pair type: uc or rc",
     TETHER_READ_LIB},
    {"TETHER_RDMA_RESEND_MS", "", "0",
     "UC: milliseconds a frame waits for its acknowledgement before it is sent again; 0: 4 round "
     "trips of its link, at least 5",
     TETHER_READ_LIB},
    {"TETHER_RDMA_WRITE_MIN", "", "262144",
     "RC: bytes from which a message to a peer of one link goes by RDMA WRITE into the "
     "receiver's buffer (rendezvous) instead of SENDs through receive slots; 0 turns it off",
     TETHER_READ_LIB},
    {"TETHER_IBVERBS_LIB", "", "libibverbs.so.1", "path of the verbs library to load",
     TETHER_READ_LIB},
    {"TETHER_RDMACM_LIB", "", "librdmacm.so.1",
     "path of the RDMA connection manager library to load (Linux, no device matrix)",
     TETHER_READ_LIB},
    {"TETHER_MPI_PLUGIN", "", "libtether-mpi-<flavour>.so beside libtether",
     "path of the MPI plugin to load (backend mpi)", TETHER_READ_LIB},
    {"TETHER_MPI_CHECK", "", "0",
     "1: every collective of the mpi backend first checks that all ranks made the same call",
     TETHER_READ_LIB},
    {"TETHER_TCP_LOCAL_SNDBUF", "", "half the L2 cache on Linux, at least 131072; 0 elsewhere",
     "send buffer in bytes of ring and mesh connections within one host; 0: the system's",
     TETHER_READ_LIB},
    /* Read by other parts of the tree (docs/env.md, second table). */
    {"TETHER_LIBRARY", "", "", "path of libtether for the Python package and the torch extension",
     TETHER_READ_PYTHON},
    {"TETHER_BIN", "", "", "path of the tether command for `python -m tether`", TETHER_READ_PYTHON},
    {"TETHER_BUILD_DIR", "", "build", "build folder whose libtether python/setup.py packages",
     TETHER_READ_PYTHON},
    {"TETHER_SYSFS_ROOT", "", "/sys", "sysfs tree a host's probe reads (test fixtures)",
     TETHER_READ_CONFIG},
    {"TETHER_BENCH_CMD", "", "tether bench", "bench command of bench/compare and compare_driver",
     TETHER_READ_SCRIPTS},
    {"TETHER_ZIG", "", "", "zig binary of the macOS cross build", TETHER_READ_SCRIPTS},
    {"TETHER_MACOS_ARCH", "", "", "aarch64 or x86_64: target of the macOS cross build",
     TETHER_READ_SCRIPTS},
    {"TETHER_MACOS_PREFIX", "", "", "where the macOS cross build finds jansson and cmocka",
     TETHER_READ_SCRIPTS},
    {"TETHER_CROSS_CACHE", "", "~/.cache/tether-cross-macos",
     "download cache of scripts/cross-macos.sh", TETHER_READ_SCRIPTS},
    {"TETHER_SOURCE_DIR", "", "", "source tree, for unit tests that read it", TETHER_READ_TESTS},
    {"TETHER_TEST_DATA", "", "", "tests/unit/data, for the unit tests", TETHER_READ_TESTS},
    {"TETHER_TEST_BIN", "", "", "the build's tether command, for the Python package's tests",
     TETHER_READ_TESTS},
    {"TETHER_TEST_NRANKS", "", "", "group size the Python and torch tests expect",
     TETHER_READ_TESTS},
    {"TETHER_TEST_DEVICE", "", "cpu", "device of the torch tests' tensors", TETHER_READ_TESTS},
    {"TETHER_TEST_FILTER", "", "", "only the algorithm tests whose name contains it",
     TETHER_READ_TESTS},
    {"TETHER_TEST_PLUGINS", "", "", "the build's MPI plugins, for tests/mpi", TETHER_READ_TESTS},
    {"TETHER_TEST_PRELOAD", "", "", "LD_PRELOAD of the install test's programs", TETHER_READ_TESTS},
    {"TETHER_TEST_UPDATE", "", "0", "1: tests/config rewrites its expected files",
     TETHER_READ_TESTS},
    {"TETHER_SUITE_BACKEND", "", "", "backend of the torch distributed suite", TETHER_READ_TESTS},
    {"TETHER_SUITE_GATES", "", "", "backend the torch suite's skip gates ask about",
     TETHER_READ_TESTS},
    {"TETHER_FAKE_SET", "", "", "fixture host set of tests/config's fake commands",
     TETHER_READ_TESTS},
    {"TETHER_FAKE_LOG", "", "", "log of tests/config's fake commands", TETHER_READ_TESTS},
    {NULL, NULL, NULL, NULL, TETHER_READ_LIB},
};

const char *const tether__env_reader_names[TETHER_READ_COUNT] = {
    [TETHER_READ_LIB] = "libtether",        [TETHER_READ_PYTHON] = "the Python package",
    [TETHER_READ_CONFIG] = "tether config", [TETHER_READ_SCRIPTS] = "build and bench scripts",
    [TETHER_READ_TESTS] = "the tests",
};

/* The table's row of a variable libtether reads; NULL when it has none. */
static const tether_env_var *lib_row(const char *name)
{
    for (const tether_env_var *e = tether__env_table; e->name; e++)
        if (e->reader == TETHER_READ_LIB && strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

/* The first set variable among the plain names of a row's fallbacks text ("MLX_RANK, RANK";
 * "MASTER_ADDR:MASTER_PORT" is no single name and is read by its own code), its name in alias. */
static const char *table_fallback(const tether_env_var *e, char alias[64])
{
    for (const char *p = e->fallbacks; *p;) {
        size_t len = strcspn(p, ", ");
        if (len > 0 && len < 64 && strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == len) {
            memcpy(alias, p, len);
            alias[len] = '\0';
            const char *v = getenv(alias);
            if (v && *v)
                return v;
        }
        p += len + strspn(p + len, ", ");
    }
    return NULL;
}

const char *tether__env(const char *name, const char *const *fallbacks)
{
    const tether_env_var *row = lib_row(name);
    if (!row) { /* tests/docs/env_names.py keeps this from happening */
        TLOG_WARN("tether bug: %s is read but is not in core/config.c's table; ignored", name);
        return NULL;
    }
    const char *v = getenv(name);
    if (v && *v)
        return v;
    char alias[64];
    if (!fallbacks)
        return table_fallback(row, alias);
    for (; *fallbacks; fallbacks++) {
        v = getenv(*fallbacks);
        if (v && *v)
            return v;
    }
    return NULL;
}

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
    char alias[64];
    const char *used = name, *v = getenv(name);
    long x = 0;
    if (!v || !*v) {
        v = table_fallback(lib_row(name), alias);
        used = alias;
    }
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
