/* core/env.c - the parameter table: one typed row per setting libtether reads (core/params.h),
 * then an untyped row per TETHER_* variable the rest of the tree reads. The bottom of core: it
 * calls nothing of it.
 *
 * A row is the one place a setting's name, the names it is also read by (MLX's, torchrun's,
 * mccl's), its type, default, range and meaning are written. core/params.c reads and checks values
 * by it; docs/env.md is tested against it (tests/unit/test_config.c: defaults and ranges) and
 * `tether check` prints it; tests/docs/env_names.py fails on a TETHER_* name in the sources that no
 * row has. ROW(ID, ...) is the variable TETHER_ID, indexed by TETHER__P_ID, so a row whose ID is
 * not in TETHER__PARAM_LIST fails to compile. tether__env_raw, at the end, reads the variables of
 * other programs (HOME, PATH, MPI launchers', torchrun's). */
#include <limits.h>
#include <stdlib.h>

#include "config.h"
#include "params.h"

#define ROW(id, ...)                                                                               \
    [TETHER__P_##id] = {.name = "TETHER_" #id, .reader = TETHER__READ_LIB, __VA_ARGS__}
#define ALSO(...) .aliases = {__VA_ARGS__}
#define LONG(d, lo, hi) .type = TETHER__T_LONG, .def = (d), .min = (lo), .max = (hi)
#define BYTES(d, lo, hi) .type = TETHER__T_BYTES, .def = (d), .min = (lo), .max = (hi)
#define BOOL(d) .type = TETHER__T_BOOL, .def = (d), .min = 0, .max = 1
/* clang-format off */
#define WORDS(d, ...) .type = TETHER__T_WORDS, .def = (d), .words = (const char *const[]){__VA_ARGS__, NULL}
/* clang-format on */
#define TEXT(d) .type = TETHER__T_TEXT, .def_text = (d)
#define PATH(d) .type = TETHER__T_PATH, .def_text = (d)
/* unset, the use site computes the default; how, in words */
#define COMPUTED(how) .computed = 1, .def_text = (how)
#define STR_(x) #x
#define STR(x) STR_(x)
#define DEFAULT_TIMEOUT STR(TETHER__DEFAULT_TIMEOUT_S)

#if defined(__APPLE__)
#define IBVERBS_LIB "librdma.dylib"
#else
#define IBVERBS_LIB "libibverbs.so.1"
#endif

const tether__param_row tether__params[TETHER__P_COUNT] = {
    ROW(BACKEND, TEXT("any"),
        .help = "backend when tether_init is given \"any\": mpi, ring, mesh, rdma, singleton"),
    ROW(RANK, ALSO("MLX_RANK", "RANK"), LONG(-1, 0, 1 << 20), .def_text = "",
        .help = "this process's rank"),
    ROW(SIZE, ALSO("MLX_WORLD_SIZE", "WORLD_SIZE"), LONG(-1, 1, 1 << 20), .def_text = "",
        .help = "number of ranks (coordinator bootstrap; rdma takes it from the device matrix)"),
    ROW(HOSTFILE, ALSO("MLX_HOSTFILE"), PATH(""),
        .help = "per-rank hostfile: JSON list of [\"ip:port\", ...] per rank"),
    ROW(COORDINATOR, ALSO("MLX_JACCL_COORDINATOR", "MASTER_ADDR:MASTER_PORT"), TEXT(""),
        .help = "host:port of rank 0 for bootstrap without a hostfile"),
    ROW(JOB_TOKEN, .type = TETHER__T_TEXT, COMPUTED("derived from the hostfile's ranks"),
        .help = "secret every connection must present (set by tether launch)"),
    ROW(IFACE_PRIORITY, ALSO("MCCL_IFACE_PRIORITY"), TEXT(""),
        .help = "comma-separated address prefixes: the only addresses used"),
    /* unset: -1, which tether__world_open makes none where the backend sends heartbeats */
    ROW(TIMEOUT, LONG(-1, 0, 86400 * 7),
        .def_text = "none for calls; " DEFAULT_TIMEOUT " to form the group",
        .help = "optional bound: seconds in which no request finishes and no data moves before "
                "TETHER_ETIMEDOUT; unset or 0: a call waits as long as its peers answer heartbeats "
                "and are not deadlocked (the MPI backend, which sends none: " DEFAULT_TIMEOUT ")"),
    ROW(HEARTBEAT, .type = TETHER__T_SECONDS, .def = 1000, .min = 50, .max = 3600 * 1000,
        .help = "seconds between heartbeats; a peer silent for 3 of them is stopped, hung or "
                "unreachable"),
    ROW(DEADLOCK, BOOL(1),
        .help = "0: no deadlock verdicts (a rank that waits in one thread while another of its "
                "threads will send later); 1: ranks waiting on each other with nothing moving for "
                "2 heartbeats fail with TETHER_EDEADLOCK, and a wait on a rank that failed its "
                "last call fails with TETHER_EPEER"),
    ROW(VERBOSE, ALSO("MLX_RING_VERBOSE"), LONG(0, 0, 9),
        .help = "1: connections and algorithm choices on stderr; 2: trace"),
    /* the order of tether__algo (core/algo/algo.h): the word's index is the algorithm */
    ROW(ALLREDUCE_ALGO, ALSO("MCCL_ALLREDUCE_ALGO"),
        WORDS(0, "auto", "ring", "tree", "butterfly", "direct", "neighbor"),
        .help = "all-reduce's algorithm; read at every call"),
    ROW(TREE_BELOW, ALSO("MCCL_TREE_BELOW"), BYTES(0, 0, LONG_MAX),
        COMPUTED("each collective's own, by group size and transport (core/algo/select.c)"),
        .help = "bytes under which all-reduce and broadcast use the latency algorithm; read at "
                "every call"),
    /* even words are float32, odd ones bfloat16 */
    ROW(WIRE_DTYPE, ALSO("MCCL_WIRE_DTYPE"), WORDS(0, "fp32", "bf16", "float32", "bfloat16"),
        .help = "bf16: float32 all-reduce payloads travel as bfloat16"),
    ROW(SPIN_US, LONG(50, 0, 1000000),
        .help = "cap of the adaptive spin budget (microseconds) before a wait sleeps"),
    /* the default stays below every platform's per-call limit (Linux: 2 GiB - 4 KiB) */
    ROW(TCP_MAX_IO, BYTES(1L << 30, 64, 1L << 30),
        .help = "largest single send/recv of the TCP backends in bytes; lowered by tests"),
    ROW(TCP_CONGESTION, .type = TETHER__T_TEXT,
        COMPUTED("Reno within one host, the system's between hosts"),
        .help = "Linux: TCP congestion control of tether's connections (e.g. cubic)"),
    ROW(TCP_LOCAL_SNDBUF, BYTES(0, 0, 1L << 30),
        COMPUTED("half the L2 cache on Linux, at least 131072; 0 elsewhere"),
        .help = "send buffer in bytes of ring and mesh connections within one host (0 or at least "
                "131072); 0: the system's"),
    /* below it, the read notice costs more than the copy saves */
    ROW(TCP_CMA_MIN, BYTES(262144, 0, 1L << 40),
        .help = "Linux: bytes from which a message between ranks of one host is read from the "
                "sender's memory (process_vm_readv) instead of the socket (between ranks with "
                "shared-memory rings when unset: from 4 MiB, 1 MiB for a broadcast's or an "
                "all-gather's, where the host's ranks outnumber its CPUs, else never); 0 turns it "
                "off"),
    ROW(SHM, BOOL(1),
        .help = "1: ranks of one host with one link between them (mesh; ring up to 3 ranks) move "
                "their frames through shared-memory rings, the socket left for doorbells and "
                "failures; 0: through the socket"),
    ROW(SHM_RING, BYTES(0, 4096, 1L << 30),
        COMPUTED("the largest power of two up to 64 MiB / ranks squared, from 64 KiB to 1 MiB"),
        .help = "bytes per direction of each such pair's ring, a power of two"),
    ROW(IBV_DEVICES, ALSO("MLX_IBV_DEVICES"), PATH(""), .help = "RDMA device matrix file (N x N)"),
    ROW(RDMA_QP, WORDS(0, "uc", "rc"), COMPUTED("uc on macOS, rc on Linux"),
        .help = "RDMA queue pair type: uc or rc"),
    ROW(RDMA_RESEND_MS, LONG(0, 0, 60000),
        .help = "UC: milliseconds a frame waits for its acknowledgement before it is sent again; "
                "0: 4 round trips of its link, at least 5"),
    ROW(RDMA_WRITE_MIN, BYTES(262144, 0, 1L << 30),
        .help = "RC: bytes from which a message to a peer of one link goes by RDMA WRITE into the "
                "receiver's buffer (rendezvous) instead of SENDs through receive slots; 0 turns "
                "it off"),
    ROW(IBVERBS_LIB, PATH(IBVERBS_LIB), .help = "path of the verbs library to load"),
    ROW(RDMACM_LIB, PATH("librdmacm.so.1"),
        .help = "path of the RDMA connection manager library to load (Linux, no device matrix)"),
    ROW(MPI_PLUGIN, .type = TETHER__T_PATH, COMPUTED("libtether-mpi-<flavour>.so beside libtether"),
        .help = "path of the MPI plugin to load (backend mpi)"),
    ROW(MPI_CHECK, BOOL(0),
        .help = "1: every collective of the mpi backend first checks that all ranks made the same "
                "call"),
};

/* The COORDINATOR row's last alias, one name at a time. */
const char tether__master_addr[] = "MASTER_ADDR", tether__master_port[] = "MASTER_PORT";

#define OTHER(n, d, h, who)                                                                        \
    {                                                                                              \
        .name = n, .def_text = d, .help = h, .reader = TETHER__READ_##who                          \
    }

/* Read by other parts of the tree (docs/env.md, second table), never by libtether. */
const tether__param_row tether__params_other[] = {
    OTHER("TETHER_LIBRARY", "", "path of libtether for the Python package and the torch extension",
          PYTHON),
    OTHER("TETHER_BIN", "", "path of the tether command for `python -m tether`", PYTHON),
    OTHER("TETHER_BUILD_DIR", "build", "build folder whose libtether python/setup.py packages",
          PYTHON),
    OTHER("TETHER_SYSFS_ROOT", "/sys", "sysfs tree a host's probe reads (test fixtures)", CONFIG),
    OTHER("TETHER_BENCH_CMD", "tether bench", "bench command of lab/compare and compare_driver",
          SCRIPTS),
    OTHER("TETHER_ZIG", "", "zig binary of the macOS cross build", SCRIPTS),
    OTHER("TETHER_MACOS_ARCH", "", "aarch64 or x86_64: target of the macOS cross build", SCRIPTS),
    OTHER("TETHER_MACOS_PREFIX", "", "where the macOS cross build finds jansson and cmocka",
          SCRIPTS),
    OTHER("TETHER_CROSS_CACHE", "~/.cache/tether-cross-macos",
          "download cache of scripts/cross-macos.sh", SCRIPTS),
    OTHER("TETHER_SOURCE_DIR", "", "source tree, for unit tests that read it", TESTS),
    OTHER("TETHER_TEST_DATA", "", "tests/unit/data, for the unit tests", TESTS),
    OTHER("TETHER_TEST_BIN", "", "the build's tether command, for the Python package's tests",
          TESTS),
    OTHER("TETHER_TEST_NRANKS", "", "group size the Python and torch tests expect", TESTS),
    OTHER("TETHER_TEST_DEVICE", "cpu", "device of the torch tests' tensors", TESTS),
    OTHER("TETHER_TEST_FILTER", "", "only the algorithm tests whose name contains it", TESTS),
    OTHER("TETHER_TEST_PLUGINS", "", "the build's MPI plugins, for tests/mpi", TESTS),
    OTHER("TETHER_TEST_PRELOAD", "", "LD_PRELOAD of the install test's programs", TESTS),
    OTHER("TETHER_TEST_UPDATE", "0", "1: tests/config rewrites its expected files", TESTS),
    OTHER("TETHER_SUITE_BACKEND", "", "backend of the torch distributed suite", TESTS),
    OTHER("TETHER_SUITE_GATES", "", "backend the torch suite's skip gates ask about", TESTS),
    OTHER("TETHER_FAKE_SET", "", "fixture host set of tests/config's fake commands", TESTS),
    OTHER("TETHER_FAKE_LOG", "", "log of tests/config's fake commands", TESTS),
    {.name = NULL},
};

const char *const tether__param_reader_names[TETHER__READ_COUNT] = {
    [TETHER__READ_LIB] = "libtether",        [TETHER__READ_PYTHON] = "the Python package",
    [TETHER__READ_CONFIG] = "tether config", [TETHER__READ_SCRIPTS] = "build and bench scripts",
    [TETHER__READ_TESTS] = "the tests",
};

/* Beside the table, so that the tree's one getenv is here: names that are no setting of ours. */
const char *tether__env_raw(const char *name)
{
    return getenv(name);
}
