/* core/params.h - libtether's settings: one typed row per TETHER_* variable (core/env.c), read
 * through one cached accessor (core/params.c). Every other variable of the tree (the Python
 * package's, the scripts', the tests') has an untyped row of its own so that each TETHER_* name has
 * one home (tests/docs/env_names.py).
 *
 * A use site names a setting by its enum constant, so a misspelt setting fails to compile:
 * tether__param_long(TETHER__P_SPIN_US, &v). The rows carry the defaults: a use site never writes
 * one again, except where the default is computed (the row then says how, in words). */
#ifndef TETHER_CORE_PARAMS_H
#define TETHER_CORE_PARAMS_H

/* libtether's settings, in docs/env.md's order; X(ID) is the variable TETHER_ID. */
#define TETHER__PARAM_LIST(X)                                                                      \
    X(BACKEND)                                                                                     \
    X(RANK)                                                                                        \
    X(SIZE)                                                                                        \
    X(HOSTFILE)                                                                                    \
    X(COORDINATOR)                                                                                 \
    X(JOB_TOKEN)                                                                                   \
    X(IFACE_PRIORITY)                                                                              \
    X(TIMEOUT)                                                                                     \
    X(HEARTBEAT)                                                                                   \
    X(DEADLOCK)                                                                                    \
    X(VERBOSE)                                                                                     \
    X(ALLREDUCE_ALGO)                                                                              \
    X(TREE_BELOW)                                                                                  \
    X(WIRE_DTYPE)                                                                                  \
    X(SPIN_US)                                                                                     \
    X(TCP_MAX_IO)                                                                                  \
    X(TCP_CONGESTION)                                                                              \
    X(TCP_LOCAL_SNDBUF)                                                                            \
    X(TCP_CMA_MIN)                                                                                 \
    X(SHM)                                                                                         \
    X(SHM_RING)                                                                                    \
    X(IBV_DEVICES)                                                                                 \
    X(RDMA_QP)                                                                                     \
    X(RDMA_RESEND_MS)                                                                              \
    X(RDMA_WRITE_MIN)                                                                              \
    X(IBVERBS_LIB)                                                                                 \
    X(RDMACM_LIB)                                                                                  \
    X(MPI_PLUGIN)                                                                                  \
    X(MPI_CHECK)

typedef enum {
#define TETHER__PARAM_ENUM(id) TETHER__P_##id,
    TETHER__PARAM_LIST(TETHER__PARAM_ENUM)
#undef TETHER__PARAM_ENUM
        TETHER__P_COUNT
} tether__param;

/* What a setting's text must be, and what the accessor gives for it. */
typedef enum {
    TETHER__T_TEXT,    /* any text (checked, where it is, by its use site) */
    TETHER__T_PATH,    /* a file */
    TETHER__T_LONG,    /* a whole number in [min, max], plain decimal */
    TETHER__T_BYTES,   /* the same, counting bytes */
    TETHER__T_SECONDS, /* seconds, a fraction allowed, in [min, max] milliseconds; given in ms */
    TETHER__T_BOOL,    /* 0 or 1 */
    TETHER__T_WORDS,   /* one of words; given as its index */
} tether__param_type;

/* Who reads a variable of the table. libtether's are read through tether__param_* only; the
 * others are listed so that every TETHER_* name in the tree is in one table. */
typedef enum {
    TETHER__READ_LIB,    /* libtether, whatever program loads it */
    TETHER__READ_PYTHON, /* the Python package (python/tether) and the torch extension's build */
    TETHER__READ_CONFIG, /* `tether config`'s probe of each host */
    /* from here on only developers meet them: `tether check` lists them only when set */
    TETHER__READ_SCRIPTS, /* build scripts and the lab's rigs (scripts/, cmake/, lab/) */
    TETHER__READ_TESTS,   /* the test suite (tests/, python/tests) */
    TETHER__READ_COUNT
} tether__param_reader;
extern const char *const tether__param_reader_names[TETHER__READ_COUNT];

#define TETHER__PARAM_ALIASES 3

/* One row. Numbers (def, min, max) are in the type's unit: milliseconds for TETHER__T_SECONDS, the
 * word's index for TETHER__T_WORDS. def_text, where set, is what docs/env.md and `tether check`
 * show as the default in place of def: a text or path row's default value, or, for a computed
 * default ("" where unset simply means none), how the use site computes it. */
typedef struct tether__param_row {
    const char *name;
    /* other names read, in order, when name is unset; "A:B" is two names read together by the use
     * site's own code (torchrun's MASTER_ADDR:MASTER_PORT), never by the accessor */
    const char *aliases[TETHER__PARAM_ALIASES + 1];
    tether__param_type type;
    long def, min, max;
    const char *def_text;
    const char *const *words; /* TETHER__T_WORDS: the accepted words, NULL-terminated */
    int computed;             /* 1: unset, the use site computes the default (def_text says how) */
    const char *help;
    tether__param_reader reader;
} tether__param_row;

/* libtether's rows, by tether__param; and the rest of the tree's, ended by a row without name. */
extern const tether__param_row tether__params[TETHER__P_COUNT];
extern const tether__param_row tether__params_other[];

/* The setting's value: from its variable, or the first of its aliases set (an empty value counts
 * as unset), else the row's default. Numbers, bools and words (the word's index) through
 * tether__param_long, text and paths through tether__param_text (the row's def_text when unset
 * and not computed; NULL when that is empty). Each returns 1 when the variable is set, 0 when the
 * default was given (a computed row's use site then computes its own), or TETHER_ECONFIG naming
 * the variable and what it accepts when its text is malformed.
 *
 * Cached per thread: parsed and validated once, and again only when the environment changes
 * (setenv, putenv and unsetenv give a variable a new entry, core/params.c), so a program may change
 * a setting between calls and the next read sees it, as a getenv would. */
int tether__param_long(tether__param id, long *out);
int tether__param_text(tether__param id, const char **out);
/* The setting as read, no error recorded: 1 set, 0 unset, -1 malformed; its number (the
 * default when unset or malformed) and text (NULL when unset). tether__param_quiet: the number
 * alone, for the logger, which the error path itself calls. */
int tether__param_peek(tether__param id, long *value, const char **text);
/* Settings ids[0..n) as tether__param_peek reads each (rc[i], value[i]; no text), the environment
 * looked at once for all: for a use site that reads several on every call (core/algo/select.c). */
void tether__param_peek_values(const tether__param *ids, int n, int *restrict rc,
                               long *restrict value);
long tether__param_quiet(tether__param id);
/* The name the setting's value came from (the variable or an alias); NULL when unset. */
const char *tether__param_from(tether__param id);

/* A setting's variable, named from its row wherever code sets it or a message names it, so that
 * each name is written once, here: TETHER__VAR(RANK) is "TETHER_RANK" (a misspelt id fails to
 * compile). TETHER__ALIAS(RANK, 0) is its first alias, "MLX_RANK". */
#define TETHER__VAR(id) (tether__params[TETHER__P_##id].name)
#define TETHER__ALIAS(id, k) (tether__params[TETHER__P_##id].aliases[k])
/* The variable with the names it is also read by, as a message names them: "TETHER_RANK (or
 * MLX_RANK, RANK)", "TETHER_COORDINATOR (or MLX_JACCL_COORDINATOR, MASTER_ADDR with
 * MASTER_PORT)"; the bare name for a row without aliases. */
const char *tether__param_names(tether__param id);
#define TETHER__VARS(id) tether__param_names(TETHER__P_##id)
/* torchrun's two names, which the COORDINATOR row's "MASTER_ADDR:MASTER_PORT" alias reads together:
 * for the code that reads or sets them one by one. */
extern const char tether__master_addr[], tether__master_port[];

/* Forget every thread's cached values: tether_init calls it, so a value changed in place (a string
 * given to putenv and then written to, which keeps its entry) is read again at the next init. */
void tether__params_reload(void);

/* The row's default and accepted values as docs/env.md and `tether check` show them, into buf. */
void tether__param_default_text(const tether__param_row *row, char *buf, unsigned len);
void tether__param_range_text(const tether__param_row *row, char *buf, unsigned len);

/* 1 if v is a number in plain decimal: an optional '-', digits and, where fraction is set, a '.'
 * and more digits. Every numeric setting is checked with it before strtol/strtod, which would also
 * take leading spaces, a '+', hexadecimal ("0x10" as 16) and, strtod, exponents, "inf" and "nan":
 * a setting written so is a mistake to report, not a number to guess at. */
int tether__plain_decimal(const char *v, int fraction);

/* The one reader of the environment for names that are not settings of the table: other
 * programs' variables (HOME, PATH, MPI launchers', torchrun's), which libtether and the tools read
 * as they are (getenv's answer: an empty value is returned as it is). */
const char *tether__env_raw(const char *name);

#endif
