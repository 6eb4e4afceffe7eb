/* config_tool/cmd_config.c - `tether config`: options, then probe, topology, plan, setup, output.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "config_tool/addr_plan.h"
#include "config_tool/config_say.h"
#include "config_tool/config_tool.h"
#include "config_tool/host_setup.h"
#include "config_tool/probe_parse.h"
#include "config_tool/probe_script.h"
#include "config_tool/results.h"
#include "config_tool/ssh_run.h"
#include "config_tool/topology.h"
#include "core/config.h"
#include "core/errors.h"
#include "core/registry.h"
#include "hostfile/hostfile.h"
#include "tools/ssh_command.h"

#define CT_DEFAULT_SSH "ssh -o BatchMode=yes -o ConnectTimeout=5"
#define CT_DEFAULT_TIMEOUT_S 60 /* system_profiler alone can take seconds */

static const char usage_text[] =
    "usage: tether config --hosts H1,H2,... | --hostfile F [options]\n"
    "\n"
    "Find the Thunderbolt cables between the hosts (over ssh), give every cable its own /30,\n"
    "and write the launcher hostfile for `tether launch --hostfile`.\n"
    "\n"
    "  --hosts LIST           hosts to ssh to, comma-separated, in the order you want\n"
    "  --hostfile F           take the hosts from a launcher hostfile\n"
    "  --over thunderbolt|ethernet   links to use (default thunderbolt)\n"
    "  --backend any|ring|mesh|rdma (default any: rdma, else mesh, else ring); MLX's jaccl\n"
    "                         and jaccl-ring mean rdma\n"
    "  --auto-setup           run the setup commands with sudo -n, then ping every cable\n"
    "  --no-auto-setup        only print them (the default)\n"
    "  --dot                  print the cables as a Graphviz graph and stop\n"
    "  --output FILE          write the hostfile there (default: print it); also\n"
    "                         --output-hostfile FILE, mlx.distributed_config's name\n"
    "  --hostfile-only        print the hostfile alone, not the hosts, cables and commands\n"
    "  --format auto|mlx|tether  backend names in the hostfile: auto (default) writes MLX's\n"
    "                         (ring, jaccl, jaccl-ring) wherever mlx.launch knows the backend,\n"
    "                         \"mesh\" otherwise; mlx writes ring for a mesh too (mlx.launch has\n"
    "                         no mesh); tether writes ring, mesh, rdma\n"
    "  --env K=V              put K=V in the hostfile's \"envs\" (repeatable)\n"
    "  --ignore-unreachable   leave out hosts that do not answer\n"
    "  --subnet CIDR          pool for the cable /30s (default " CT_DEFAULT_POOL ", then\n"
    "                         " CT_FALLBACK_POOL_1 " and " CT_FALLBACK_POOL_2
    " when your networks fill it)\n"
    "  --ssh-command CMD      run CMD HOST SCRIPT, through sh (default \"" CT_DEFAULT_SSH "\")\n"
    "  --timeout S            seconds each ssh session may take (default 60)\n"
    "  --verbose              say what is being done\n";

static int add_host(ct_options *o, const char *name)
{
    if (!name[0] || name[0] == '-' || strcspn(name, " \t\n") != strlen(name) ||
        strlen(name) >= TETHER__HOST_MAX) {
        ct_say("host \"%s\" is not a host name to ssh to", name);
        return -1;
    }
    for (int i = 0; i < o->nhosts; i++)
        if (strcmp(o->hosts[i], name) == 0) {
            ct_say("host %s is listed twice", name);
            return -1;
        }
    if (o->nhosts == CT_MAX_HOSTS) {
        ct_say("more than %d hosts", CT_MAX_HOSTS);
        return -1;
    }
    o->hosts[o->nhosts++] = name;
    return 0;
}

static int hosts_from_list(ct_options *o, char *list)
{
    char *save = NULL;

    for (char *h = strtok_r(list, ",", &save); h; h = strtok_r(NULL, ",", &save))
        if (add_host(o, h) < 0)
            return -1;
    return 0;
}

static int hosts_from_file(ct_options *o, const char *path, tether__launch_hosts *hf)
{
    tether__clear_error();
    if (tether__hostfile_load_launch(path, hf) < 0) {
        ct_say("%s", tether_last_error());
        return -1;
    }
    for (int i = 0; i < hf->nhosts; i++)
        if (add_host(o, hf->hosts[i].ssh) < 0)
            return -1;
    return 0;
}

static int parse_backend(const char *s, ct_backend *out)
{
    /* the library's names ("any" as tether_init takes it); "auto", this option's old name, too */
    static const char *const names[] = {"any", "ring", "mesh", "rdma"};
    const char *meant = tether__backend_canonical(strcmp(s, "auto") ? s : "any");

    for (int b = 0; meant && b < 4; b++)
        if (strcmp(meant, names[b]) == 0) {
            *out = (ct_backend)b;
            return 0;
        }
    ct_say("--backend %s: expected any, ring, mesh or rdma (or MLX's jaccl, jaccl-ring)", s);
    return -1;
}

static int parse_format(const char *s, ct_format *out)
{
    static const char *const names[] = {"auto", "mlx", "tether"};

    for (int f = 0; f < 3; f++)
        if (strcmp(s, names[f]) == 0) {
            *out = (ct_format)f;
            return 0;
        }
    ct_say("--format %s: expected auto, mlx or tether", s);
    return -1;
}

/* Options that take a value; the flags are set in place. */
static int option_value(ct_options *o, int c, char *arg, char **ssh, tether__launch_hosts *hf)
{
    char *end;

    switch (c) {
    case 'H':
        return hosts_from_list(o, arg);
    case 'f':
        return hosts_from_file(o, arg, hf);
    case 'b':
        return parse_backend(arg, &o->backend);
    case 'F':
        return parse_format(arg, &o->format);
    case 'o':
        o->output = arg;
        return 0;
    case 's':
        *ssh = arg;
        return 0;
    case 'e':
        if (!strchr(arg, '=') || arg[0] == '=' || o->nenvs == CT_MAX_ENVS) {
            ct_say("--env %s: expected KEY=VALUE (at most %d of them)", arg, CT_MAX_ENVS);
            return -1;
        }
        o->envs[o->nenvs++] = arg;
        return 0;
    case 'O':
        if (strcmp(arg, "thunderbolt") && strcmp(arg, "ethernet")) {
            ct_say("--over %s: expected thunderbolt or ethernet", arg);
            return -1;
        }
        o->ethernet = strcmp(arg, "ethernet") == 0;
        return 0;
    case 'n':
        o->npools = 1;
        if (ct_parse_cidr(arg, &o->pools[0].net, &o->pools[0].mask) < 0) {
            ct_say("--subnet %s: expected an IPv4 network A.B.C.D/N with N 8-30 and no host bits "
                   "set, e.g. " CT_DEFAULT_POOL,
                   arg);
            return -1;
        }
        return 0;
    case 't':
        o->timeout_s = (int)strtol(arg, &end, 10);
        if (*end || o->timeout_s < 1 || o->timeout_s > 3600) {
            ct_say("--timeout %s: expected seconds, 1-3600", arg);
            return -1;
        }
        return 0;
    }
    return -1;
}

static const struct option long_opts[] = {
    {"hosts", required_argument, 0, 'H'},
    {"hostfile", required_argument, 0, 'f'},
    {"over", required_argument, 0, 'O'},
    {"backend", required_argument, 0, 'b'},
    {"auto-setup", no_argument, 0, 'a'},
    {"dot", no_argument, 0, 'd'},
    {"output", required_argument, 0, 'o'},
    {"env", required_argument, 0, 'e'},
    {"ignore-unreachable", no_argument, 0, 'i'},
    {"subnet", required_argument, 0, 'n'},
    {"ssh-command", required_argument, 0, 's'},
    {"timeout", required_argument, 0, 't'},
    {"verbose", no_argument, 0, 'v'},
    {"help", no_argument, 0, 'h'},
    /* mlx.distributed_config's spellings */
    {"output-hostfile", required_argument, 0, 'o'},
    {"no-auto-setup", no_argument, 0, 'A'},
    {"hostfile-only", no_argument, 0, 'y'},
    {"format", required_argument, 0, 'F'},
    {0, 0, 0, 0},
};

/* 0: go on; 1: help printed; 2: bad usage (said why). */
static int parse_options(int argc, char **argv, ct_options *o, char **ssh, tether__launch_hosts *hf)
{
    static const char *const pools[CT_MAX_POOLS] = {CT_DEFAULT_POOL, CT_FALLBACK_POOL_1,
                                                    CT_FALLBACK_POOL_2};
    int c;

    for (o->npools = 0; o->npools < CT_MAX_POOLS; o->npools++)
        ct_parse_cidr(pools[o->npools], &o->pools[o->npools].net, &o->pools[o->npools].mask);
    o->timeout_s = CT_DEFAULT_TIMEOUT_S;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+hv", long_opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(usage_text, stdout);
            return 1;
        }
        if (c == '?' || c == ':') {
            ct_say("unknown option or missing value: %s (see tether config --help)",
                   argv[optind - 1]);
            return 2;
        }
        switch (c) {
        case 'a':
            o->auto_setup = 1;
            break;
        case 'A':
            o->auto_setup = 0;
            break;
        case 'y':
            o->hostfile_only = 1;
            break;
        case 'd':
            o->dot = 1;
            break;
        case 'i':
            o->ignore_unreachable = 1;
            break;
        case 'v':
            o->verbose = 1;
            break;
        default:
            if (option_value(o, c, optarg, ssh, hf) < 0)
                return 2;
        }
    }
    if (optind < argc) {
        ct_say("unexpected argument %s (see tether config --help)", argv[optind]);
        return 2;
    }
    if (o->nhosts == 0) {
        ct_say("no hosts: give --hosts H1,H2,... or --hostfile F");
        return 2;
    }
    return 0;
}

/* Probe every host at once; fill run->hosts. Unreachable hosts fail the run, or are dropped with
 * --ignore-unreachable. */
static int probe_all(ct_run *run)
{
    const char *cmds[CT_MAX_HOSTS];
    ct_session *s = calloc(CT_MAX_HOSTS, sizeof *s);
    int bad = 0, kept = 0;

    if (!s)
        return -1;
    for (int i = 0; i < run->opt.nhosts; i++)
        cmds[i] = ct_probe_command();
    ct_verbose(&run->opt, "probing %d host(s) with %s ...", run->opt.nhosts, run->opt.ssh_command);
    if (ct_ssh_run_all(run->opt.ssh_command, run->opt.hosts, cmds, run->opt.nhosts,
                       run->opt.timeout_s, s) < 0) {
        ct_say("cannot run %s", run->opt.ssh_command);
        free(s);
        return -1;
    }
    for (int i = 0; i < run->opt.nhosts; i++) {
        ct_host *h = &run->hosts[kept];
        memset(h, 0, sizeof *h);
        snprintf(h->name, sizeof h->name, "%s", run->opt.hosts[i]);
        if (s[i].status != 0)
            ct_session_error(&s[i], run->opt.timeout_s, h->error, sizeof h->error);
        else if (ct_probe_parse(h, s[i].out) == 0)
            h->reachable = 1;
        ct_session_free(&s[i]);
        if (!h->reachable) {
            ct_say("%s: %s%s", h->name, h->error, run->opt.ignore_unreachable ? " (left out)" : "");
            bad++;
            continue;
        }
        ct_verbose(&run->opt, "%s: %s %s, %d Thunderbolt port(s)", h->name,
                   h->os == CT_OS_MACOS ? "macOS" : "Linux", h->os_version, h->nports);
        kept++;
    }
    free(s);
    run->nhosts = kept;
    if (bad && !run->opt.ignore_unreachable) {
        ct_say("%d host(s) could not be probed; fix them or pass --ignore-unreachable", bad);
        return -1;
    }
    if (kept == 0)
        ct_say("no host could be probed");
    return kept ? 0 : -1;
}

/* The hostfile: written to --output (and read back, so it is known to load), or printed. */
static int write_hostfile(const ct_run *run)
{
    tether__launch_hosts hf, back;
    char *text = NULL;
    int rc;

    if (ct_build_hostfile(run, &hf) < 0)
        return -1;
    tether__clear_error();
    if (run->opt.output) {
        rc = tether__hostfile_write_launch(run->opt.output, &hf);
        if (rc == 0 && (rc = tether__hostfile_load_launch(run->opt.output, &back)) == 0)
            tether__launch_hosts_free(&back);
        if (rc == 0 && !run->opt.hostfile_only)
            printf("hostfile: %s\n", run->opt.output);
    } else if ((rc = tether__hostfile_format_launch(&hf, &text)) == 0) {
        printf("%s%s", run->opt.hostfile_only ? "" : "hostfile:\n", text);
        free(text);
    }
    if (rc < 0)
        ct_say("%s", tether_last_error());
    tether__launch_hosts_free(&hf);
    return rc;
}

static int configure(ct_run *run)
{
    if (probe_all(run) < 0)
        return CT_EXIT_FAILED;
    ct_topology_build(run);
    if (run->opt.dot) {
        ct_print_dot(run);
        return 0;
    }
    int chosen = ct_backend_choose(run);
    if (chosen == 0 && run->opt.format == CT_FORMAT_MLX && run->backend == CT_BACKEND_MESH &&
        !run->opt.ethernet) { /* mlx.launch has no mesh: the ring it contains */
        run->backend = CT_BACKEND_RING;
        snprintf(run->backend_why, sizeof run->backend_why,
                 "ring: --format mlx, and mlx.launch has no mesh backend; the ring through the "
                 "mesh's cables");
    }
    if (chosen < 0 || (!run->opt.ethernet && ct_plan_addresses(run) < 0)) {
        ct_print_summary(run, 0);
        return CT_EXIT_FAILED;
    }
    if (!run->opt.hostfile_only)
        ct_print_summary(run, !run->opt.auto_setup);
    if (run->opt.auto_setup && !run->opt.ethernet && ct_auto_setup(run) < 0) {
        ct_print_commands(run);
        return CT_EXIT_FAILED;
    }
    return write_hostfile(run) < 0 ? CT_EXIT_FAILED : 0;
}

int tether__cmd_config(int argc, char **argv)
{
    tether__launch_hosts hf = {0};
    ct_run *run = calloc(1, sizeof *run);
    char *ssh = NULL;
    int rc;

    if (!run) {
        ct_say("out of memory");
        return CT_EXIT_FAILED;
    }
    rc = parse_options(argc, argv, &run->opt, &ssh, &hf);
    run->opt.ssh_command = ssh ? ssh : CT_DEFAULT_SSH;
    if (rc == 0 && !tether__ssh_command_ok(run->opt.ssh_command)) {
        ct_say("--ssh-command: expected a non-blank command of at most %d bytes, e.g. \"%s\"",
               TETHER__SSH_COMMAND_MAX, CT_DEFAULT_SSH);
        rc = 2;
    }
    if (rc == 0)
        rc = configure(run);
    else
        rc = rc == 1 ? 0 : CT_EXIT_USAGE;
    fflush(stdout);
    tether__launch_hosts_free(&hf);
    free(run);
    return rc;
}
