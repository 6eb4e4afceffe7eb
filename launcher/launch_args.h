/* launcher/launch_args.h - the `tether launch` command line, read into a tether__launch_opts
 * (launch_args.c). */
#ifndef TETHER_LAUNCHER_LAUNCH_ARGS_H
#define TETHER_LAUNCHER_LAUNCH_ARGS_H

#define TETHER__LAUNCH_MAX_RANKS 4096

enum { TETHER__BIND_SPREAD, TETHER__BIND_NONE }; /* --bind's values (bind.c binds) */

typedef struct tether__launch_opts {
    int nranks;              /* -n: local ranks, or ranks per host; 0 when not given */
    const char *hosts;       /* --hosts h1,h2; NULL when not given */
    const char *hostfile;    /* --hostfile; NULL when not given */
    const char *ssh_command; /* --ssh-command, run by sh with the host and command appended */
    const char *cwd;         /* --cwd; NULL: the launcher's cwd where it exists, else home */
    const char *backend;     /* --backend; NULL when not given */
    int nenvs;
    char **envs;        /* --env K=V, in order (points into argv) */
    int prefix;         /* --prefix: "[rank] " before every line */
    int verbose;        /* --verbose */
    int starting_port;  /* --starting-port; 0: free ports picked by the system */
    int conns_per_ip;   /* --connections-per-ip, >= 1 */
    long timeout_s;     /* --timeout */
    int timeout_set;    /* --timeout was given (0 is a value: heartbeats only) */
    const char *python; /* --python; NULL: python3 on the rank's PATH */
    int print_python;   /* --print-python: say which Python and exit */
    int no_verify;      /* --no-verify-script */
    int bind;           /* --bind: TETHER__BIND_SPREAD (default) or TETHER__BIND_NONE */
    char **cmd;         /* PROGRAM ARGS..., NULL-terminated (points into argv, or python_cmd) */
    char **python_cmd;  /* PYTHON PROGRAM.py ARGS... for a .py PROGRAM (malloc'd), else NULL */
} tether__launch_opts;

/* 0: options read; 1: help was printed (exit 0); 2: bad usage, message printed (exit 2). Free
 * o->envs and o->python_cmd after either. */
int tether__launch_parse(int argc, char **argv, tether__launch_opts *o);
/* The Python a .py PROGRAM runs with: --python, else "python3". */
const char *tether__launch_python(const tether__launch_opts *o);

/* --bind's value: TETHER__BIND_SPREAD for "spread", TETHER__BIND_NONE for "none", else -1. */
int tether__bind_parse(const char *text);
/* 1 if kv is NAME=VALUE with NAME a shell variable name (letters, digits, '_', no leading digit):
 * --env takes nothing else, as remote ranks get `export NAME=...`. */
int tether__env_name_ok(const char *kv);

#endif
