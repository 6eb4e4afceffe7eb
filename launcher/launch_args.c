/* launcher/launch_args.c - the `tether launch` command line: options into a tether__launch_opts. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/registry.h"
#include "launch_args.h"
#include "launch_say.h"
#include "tools/ssh_command.h"

static const char launch_usage[] =
    "usage: tether launch -n N [options] [--] PROGRAM [ARGS...]\n"
    "       tether launch (--hosts H1,H2,... | --hostfile F) [-n N] [options] [--] PROGRAM "
    "[ARGS...]\n"
    "\n"
    "Start ranks of PROGRAM, wired together: N on this machine, or N on each host (over ssh\n"
    "unless the host is this machine). Each rank gets TETHER_RANK, TETHER_SIZE, TETHER_HOSTFILE\n"
    "(a per-rank hostfile in a private temp dir, removed at the end), TETHER_JOB_TOKEN (random\n"
    "per job) and torchrun's MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK,\n"
    "LOCAL_WORLD_SIZE, and MLX's MLX_RANK, MLX_WORLD_SIZE, MLX_HOSTFILE (and MLX_IBV_DEVICES,\n"
    "MLX_JACCL_COORDINATOR for rdma), so MLX programs run unchanged. A PROGRAM ending in .py is\n"
    "run with Python (--python), as mlx.launch does.\n"
    "\n"
    "options:\n"
    "  -n, --nranks N            ranks on this machine, or per host with hosts (default 1);\n"
    "                            also --repeat-hosts N, mlx.launch's name\n"
    "  --hosts H1,H2,...         ssh destinations ([user@]host), one rank group per host\n"
    "  --hostfile F              launcher hostfile (mlx.launch's format: ssh, ips, rdma,\n"
    "                            backend, envs)\n"
    "  --ssh-command CMD         how to run ssh (default: ssh -o BatchMode=yes); run by sh\n"
    "  --cwd DIR                 working directory of every rank (default: this one if the host\n"
    "                            has it, else home); missing on a host is an error\n"
    "  --backend B               ring, mesh, rdma (or MLX's jaccl, jaccl-ring) or any: sets\n"
    "                            TETHER_BACKEND\n"
    "  --env K=V                 set K=V for every rank (repeatable; wins over the above)\n"
    "  --prefix                  start every output line with \"[rank] \"\n"
    "  --verbose                 say what the launcher does; sets TETHER_VERBOSE=1\n"
    "  -p, --starting-port P     listen ports count up from P across ranks, addresses and\n"
    "                            connections (as mlx.launch); default: free ports when every\n"
    "                            host is this machine, else 5000\n"
    "  --connections-per-ip K    K listen addresses per rank (parallel links), default 1\n"
    "  --bind spread|none        spread: several ranks on one machine each get their own\n"
    "                            share of its CPUs (default; Linux, taskset over ssh); none:\n"
    "                            the system places them\n"
    "  --timeout S               sets TETHER_TIMEOUT=S: a bound of S seconds without progress\n"
    "                            on every call (default none: a call waits while its peers\n"
    "                            are alive and not deadlocked)\n"
    "  --python PY               the Python that runs a .py PROGRAM (default python3 on each\n"
    "                            rank's PATH)\n"
    "  --print-python            print the path of that Python and exit\n"
    "  --no-verify-script        do not check that a .py PROGRAM exists here before starting\n"
    "  -h, --help                this text\n"
    "\n"
    "Output passes through in whole lines (an unfinished one, a prompt, after 100 ms of quiet;\n"
    "another rank's line then starts a new one). stdin goes to every rank. The exit status is 0\n"
    "only if every rank exits 0; else the first failing rank's (128+N for signal N), and the\n"
    "other ranks get SIGTERM, then SIGKILL after 3 s. SIGINT/SIGTERM to tether stop every rank\n"
    "too.\n";

enum opt_id {
    OPT_N,
    OPT_HOSTS,
    OPT_HOSTFILE,
    OPT_SSH,
    OPT_CWD,
    OPT_BACKEND,
    OPT_ENV,
    OPT_PREFIX,
    OPT_VERBOSE,
    OPT_PORT,
    OPT_CONNS,
    OPT_BIND,
    OPT_TIMEOUT,
    OPT_PYTHON,
    OPT_PRINT_PYTHON,
    OPT_NO_VERIFY,
    OPT_HELP
};

static const struct launch_option {
    const char *name; /* long form, without "--" */
    char short_name;  /* 0: none */
    int has_arg;
    enum opt_id id;
} launch_options[] = {
    {"nranks", 'n', 1, OPT_N},
    {"repeat-hosts", 0, 1, OPT_N},
    {"hosts", 0, 1, OPT_HOSTS},
    {"hostfile", 0, 1, OPT_HOSTFILE},
    {"ssh-command", 0, 1, OPT_SSH},
    {"cwd", 0, 1, OPT_CWD},
    {"backend", 0, 1, OPT_BACKEND},
    {"env", 0, 1, OPT_ENV},
    {"prefix", 0, 0, OPT_PREFIX},
    {"verbose", 0, 0, OPT_VERBOSE},
    {"starting-port", 'p', 1, OPT_PORT},
    {"connections-per-ip", 0, 1, OPT_CONNS},
    {"bind", 0, 1, OPT_BIND},
    {"timeout", 0, 1, OPT_TIMEOUT},
    {"python", 0, 1, OPT_PYTHON},
    {"print-python", 0, 0, OPT_PRINT_PYTHON},
    {"no-verify-script", 0, 0, OPT_NO_VERIFY},
    {"help", 'h', 0, OPT_HELP},
};
#define NOPTIONS (sizeof launch_options / sizeof launch_options[0])

/* Report a usage error; returns 2 for the caller to pass on. */
static int usage_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tether__launch_say("%s (run 'tether launch --help' for usage)", msg);
    return 2;
}

static int parse_range(const char *opt, const char *text, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end != '\0' || v < min || v > max)
        return usage_error("%s: expected a whole number from %ld to %ld, got '%s'", opt, min, max,
                           text);
    *out = v;
    return 0;
}

/* The backend as tether_init names it ("jaccl" is rdma); NULL after a usage error. */
static const char *check_backend(const char *b)
{
    const char *meant = tether__backend_canonical(b);
    if (meant && !strcmp(meant, "mpi")) { /* MPI's own launcher starts those ranks */
        usage_error("--backend mpi: start the ranks with the MPI's launcher instead, e.g. "
                    "'mpirun -n 4 ./prog' (docs/mpi.md)");
        return NULL;
    }
    if (!meant || !strcmp(meant, "singleton")) {
        usage_error("--backend: expected ring, mesh, rdma (or jaccl, jaccl-ring) or any, got '%s'",
                    b);
        return NULL;
    }
    return meant;
}

/* K=V with K a valid variable name, so the rank's environment gets what the user meant. */
static int check_env(const char *kv)
{
    return tether__env_name_ok(kv) ? 0
                                   : usage_error("--env: expected NAME=VALUE with NAME made of "
                                                 "letters, digits and '_', got '%s'",
                                                 kv);
}

static int apply_option(tether__launch_opts *o, enum opt_id id, const char *opt, char *val)
{
    long v = 0; /* parse_range sets it on success; -O3 cannot see that */
    int rc = 0;
    switch (id) {
    case OPT_N:
        rc = parse_range(opt, val, 1, TETHER__LAUNCH_MAX_RANKS, &v);
        o->nranks = (int)v;
        break;
    case OPT_HOSTS:
        o->hosts = val;
        rc = *val && *val != ',' && val[strlen(val) - 1] != ',' && !strstr(val, ",,")
                 ? 0
                 : usage_error("--hosts: expected a comma-separated list of hosts, got '%s'", val);
        break;
    case OPT_HOSTFILE:
        o->hostfile = val;
        break;
    case OPT_SSH:
        o->ssh_command = val;
        rc = tether__ssh_command_ok(val) ? 0
                                         : usage_error("--ssh-command: expected a non-blank "
                                                       "command of at most %d bytes, got '%.40s'",
                                                       TETHER__SSH_COMMAND_MAX, val);
        break;
    case OPT_CWD:
        o->cwd = val;
        rc = *val ? 0 : usage_error("--cwd: empty");
        break;
    case OPT_BACKEND:
        o->backend = check_backend(val);
        rc = o->backend ? 0 : 2;
        break;
    case OPT_ENV:
        rc = check_env(val);
        o->envs[o->nenvs++] = val;
        break;
    case OPT_PREFIX:
        o->prefix = 1;
        break;
    case OPT_VERBOSE:
        o->verbose = 1;
        break;
    case OPT_PORT:
        rc = parse_range(opt, val, 1, 65535, &v);
        o->starting_port = (int)v;
        break;
    case OPT_CONNS:
        rc = parse_range(opt, val, 1, 64, &v);
        o->conns_per_ip = (int)v;
        break;
    case OPT_BIND:
        o->bind = tether__bind_parse(val);
        rc = o->bind >= 0 ? 0 : usage_error("--bind: expected spread or none, got '%s'", val);
        break;
    case OPT_TIMEOUT:
        rc = parse_range(opt, val, 0, 7 * 24 * 3600, &v);
        o->timeout_s = v;
        o->timeout_set = 1;
        break;
    case OPT_PYTHON:
        o->python = val;
        rc = *val ? 0 : usage_error("--python: empty");
        break;
    case OPT_PRINT_PYTHON:
        o->print_python = 1;
        break;
    case OPT_NO_VERIFY:
        o->no_verify = 1;
        break;
    case OPT_HELP:
        fputs(launch_usage, stdout);
        return 1;
    }
    return rc;
}

static const struct launch_option *find_long(const char *name, size_t len)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (strlen(launch_options[i].name) == len &&
            strncmp(launch_options[i].name, name, len) == 0)
            return &launch_options[i];
    return NULL;
}

static const struct launch_option *find_short(char c)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (launch_options[i].short_name == c)
            return &launch_options[i];
    return NULL;
}

/* Read the option at argv[*i] ("--name", "--name=value", "-x", "-xvalue"), advancing *i past its
 * value. Returns what apply_option returns. */
static int parse_one(tether__launch_opts *o, int argc, char **argv, int *i)
{
    char *arg = argv[*i], *val = NULL;
    const struct launch_option *opt;
    if (arg[1] == '-') {
        char *eq = strchr(arg + 2, '=');
        opt = find_long(arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2));
        val = eq ? eq + 1 : NULL;
    } else {
        opt = find_short(arg[1]);
        val = arg[2] ? arg + 2 : NULL;
    }
    if (!opt)
        return usage_error("unknown option '%s'", arg);
    if (!opt->has_arg && val)
        return usage_error("option '%s' takes no value", arg);
    if (opt->has_arg && !val) {
        if (*i + 1 >= argc)
            return usage_error("option '%s' needs a value", arg);
        val = argv[++*i];
    }
    return apply_option(o, opt->id, arg, val);
}

/* 1 if the program is a Python script, which mlx.launch runs with Python. */
static int is_python_script(const char *prog)
{
    size_t n = strlen(prog);
    return n > 3 && strcmp(prog + n - 3, ".py") == 0;
}

/* A .py PROGRAM runs as PYTHON PROGRAM ARGS; checked first unless --no-verify-script, so a typo
 * fails here rather than on every rank. */
static int python_command(tether__launch_opts *o, char **cmd)
{
    size_t n = 0;
    if (!o->no_verify) {
        char path[PATH_MAX];
        int len = cmd[0][0] == '/' || !o->cwd
                      ? snprintf(path, sizeof path, "%s", cmd[0])
                      : snprintf(path, sizeof path, "%s/%s", o->cwd, cmd[0]);
        if (len < 0 || (size_t)len >= sizeof path || access(path, R_OK) != 0)
            return usage_error("%s: %s (--no-verify-script starts it anyway, for a script that "
                               "exists only on the hosts)",
                               path, strerror(errno ? errno : ENAMETOOLONG));
    }
    while (cmd[n])
        n++;
    if (!(o->python_cmd = calloc(n + 2, sizeof *o->python_cmd)))
        return usage_error("out of memory");
    o->python_cmd[0] = (char *)tether__launch_python(o);
    memcpy(o->python_cmd + 1, cmd, (n + 1) * sizeof *cmd);
    o->cmd = o->python_cmd;
    return 0;
}

const char *tether__launch_python(const tether__launch_opts *o)
{
    return o->python ? o->python : "python3";
}

int tether__launch_parse(int argc, char **argv, tether__launch_opts *o)
{
    int i, rc;
    memset(o, 0, sizeof *o);
    o->conns_per_ip = 1;
    o->bind = TETHER__BIND_SPREAD;
    o->ssh_command = "ssh -o BatchMode=yes";
    /* --env values point into argv; there are at most argc of them. */
    o->envs = calloc((size_t)argc + 1, sizeof *o->envs);
    if (!o->envs)
        return usage_error("out of memory");
    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        rc = parse_one(o, argc, argv, &i);
        if (rc)
            return rc;
    }
    if (o->print_python)
        return 0;
    if (i >= argc)
        return usage_error("no PROGRAM given");
    if (o->hosts && o->hostfile)
        return usage_error("--hosts and --hostfile: give one of them");
    if (o->nranks == 0 && !o->hosts && !o->hostfile)
        return usage_error("-n N is required without hosts: how many ranks to start");
    o->cmd = argv + i;
    return is_python_script(o->cmd[0]) ? python_command(o, o->cmd) : 0;
}

int tether__bind_parse(const char *text)
{
    if (!strcmp(text, "spread"))
        return TETHER__BIND_SPREAD;
    if (!strcmp(text, "none"))
        return TETHER__BIND_NONE;
    return -1;
}

int tether__env_name_ok(const char *kv)
{
    size_t n = strcspn(kv, "=");
    if (n == 0 || kv[n] != '=' || (kv[0] >= '0' && kv[0] <= '9'))
        return 0;
    return strspn(kv, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n;
}
