/* core/env.c - the table of every TETHER_* variable (core/config.h), and its one reader,
 * tether__env: the bottom of core, calling nothing of it (the logger reads its level here). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

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
    {"TETHER_SHM", "", "1",
     "1: ranks of one host with one link between them (mesh; ring up to 3 ranks) move their frames "
     "through "
     "shared-memory rings, the socket left for doorbells and failures; 0: through the socket",
     TETHER_READ_LIB},
    {"TETHER_SHM_RING", "", "262144",
     "bytes per direction of each such pair's ring, a power of two from 4096", TETHER_READ_LIB},
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
    {"TETHER_BENCH_CMD", "", "tether bench", "bench command of lab/compare and compare_driver",
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

/* name, or the first of its fallbacks set (the table's when fallbacks is NULL), its name in from.
 */
static const char *lookup(const char *name, const char *const *fallbacks, char from[64])
{
    const tether_env_var *row = lib_row(name);
    if (!row) { /* tests/docs/env_names.py keeps this from happening */
        /* on stderr whatever TETHER_LOG_LEVEL says: the logger reads its level through here */
        fprintf(stderr,
                "tether: tether bug: %s is read but is not in core/env.c's table; ignored\n", name);
        return NULL;
    }
    const char *v = getenv(name);
    snprintf(from, 64, "%s", name);
    if (v && *v)
        return v;
    if (!fallbacks)
        return table_fallback(row, from);
    for (; *fallbacks; fallbacks++) {
        v = getenv(*fallbacks);
        if (v && *v) {
            snprintf(from, 64, "%s", *fallbacks);
            return v;
        }
    }
    return NULL;
}

const char *tether__env(const char *name, const char *const *fallbacks)
{
    char from[64];
    return lookup(name, fallbacks, from);
}

const char *tether__env_from(const char *name, char from[64])
{
    return lookup(name, NULL, from);
}
