/* launcher/check.c - `tether check`: this machine's report, or, with hosts, every host's report
 * and the links between them measured by a launched job of `tether check` ranks. */
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/rdma/rdma.h"
#include "check.h"
#include "cli/commands.h"
#include "core/registry.h"
#include "core/size_arg.h"
#include "core/transport.h"
#include "launch_say.h"
#include "tether.h"
#include "tools/argv0.h"
#include "tools/strbuf.h"

#define RANK_MODE "--as-rank" /* internal: how the launched ranks are told what they are */
#define DEFAULT_BYTES (256u << 20)
#define CHECK_TIMEOUT "60" /* TETHER_TIMEOUT of the measuring job */

static const char check_usage[] =
    "usage: tether check [--hosts H1,H2,... | --hostfile F] [options]\n"
    "\n"
    "Without hosts: what this machine has - version, each backend and why it is not usable,\n"
    "network interfaces (Thunderbolt ones marked, TETHER_IFACE_PRIORITY applied), RDMA devices,\n"
    "the TETHER_* values in force, and problems. With hosts: the same on every host, then the\n"
    "group forms and every pair of ranks is measured (8-byte round trip, bandwidth), printed as\n"
    "matrices with a warning for a link far below the others. Exit status 1 on any problem.\n"
    "\n"
    "options (with hosts; see 'tether launch --help'):\n"
    "  --hosts, --hostfile, --ssh-command, --backend, --starting-port, --connections-per-ip,\n"
    "  --env, --cwd, --bind, --verbose, -n (ranks per host, default 1)\n"
    "  --bytes SIZE              bytes per bandwidth measurement, such as 64M (default 256M,\n"
    "                            at most 1T)\n"
    "  -h, --help                this text\n"
    "The tether command must be at the same path on every host.\n";

/* Print the report of this machine; 1 when it found problems. */
static int check_here(void)
{
    tether__hostcheck_report r = {0};
    char *text, *problems;
    tether__hostcheck_local(&r);
    text = tether__sb_take(&r.text, "the report");
    problems = tether__sb_take(&r.problems, "the report");
    printf("%sproblems:\n%s", text ? text : "",
           r.nproblems ? (problems ? problems : "") : "  none\n");
    free(text);
    free(problems);
    return r.nproblems ? 1 : 0;
}

/* --bytes: a size (core/size_arg.h) from 1 byte to 1 TiB, the most a measurement sends. */
static int parse_bytes(const char *text, size_t *out)
{
    char err[TETHER__SIZE_ERR_MAX];
    size_t v;
    if (tether__size_parse("--bytes", text, &v, err, sizeof err) != 0) {
        fprintf(stderr, "tether check: %s\n", err);
        return -1;
    }
    if (v == 0 || v > (size_t)1 << 40) {
        fprintf(stderr, "tether check: --bytes: '%s' is out of range: 1 byte to 1T\n", text);
        return -1;
    }
    *out = v;
    return 0;
}

/* Options handed to the launcher as they are (it checks their values). */
static int forwarded(const char *opt)
{
    static const char *const names[] = {"--hosts",   "--hostfile",      "--ssh-command",
                                        "--backend", "--starting-port", "--connections-per-ip",
                                        "--env",     "--cwd",           "-n",
                                        "--nranks",  "--bind"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(opt, names[i]) == 0)
            return 1;
    return 0;
}

/* `tether launch <forwarded options> --timeout 60 --prefix -- <self> check --as-rank BYTES`. */
static int check_hosts(int argc, char **argv, size_t bytes, int verbose)
{
    char self[4096], bytes_text[32];
    char **largv = calloc((size_t)argc + 12, sizeof *largv);
    int n = 0, rc;
    if (!largv) {
        fprintf(stderr, "tether check: out of memory\n");
        return TETHER__LAUNCH_EXIT_FAILED;
    }
    largv[n++] = "launch";
    for (int i = 1; i < argc; i++)
        if (forwarded(argv[i]) && i + 1 < argc) {
            largv[n++] = argv[i];
            largv[n++] = argv[++i];
        }
    if (verbose)
        largv[n++] = "--verbose";
    snprintf(bytes_text, sizeof bytes_text, "%zu", bytes);
    largv[n++] = "--timeout";
    largv[n++] = CHECK_TIMEOUT;
    largv[n++] = "--";
    largv[n++] = (char *)tether__self_path(self, sizeof self);
    largv[n++] = "check";
    largv[n++] = RANK_MODE;
    largv[n++] = bytes_text;
    rc = tether__cmd_launch(n, largv);
    free(largv);
    return rc;
}

int tether__cmd_check(int argc, char **argv)
{
    size_t bytes = DEFAULT_BYTES;
    int hosts = 0, verbose = 0;
    if (argc == 3 && strcmp(argv[1], RANK_MODE) == 0)
        return parse_bytes(argv[2], &bytes) ? TETHER__LAUNCH_EXIT_USAGE
                                            : tether__hostcheck_rank(bytes);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(check_usage, stdout);
            return 0;
        } else if (strcmp(argv[i], "--verbose") == 0) {
            verbose = 1;
        } else if (!forwarded(argv[i]) && strcmp(argv[i], "--bytes") != 0) {
            fprintf(stderr, "tether check: unknown option '%s' (run 'tether check --help')\n",
                    argv[i]);
            return TETHER__LAUNCH_EXIT_USAGE;
        } else if (i + 1 >= argc) {
            fprintf(stderr, "tether check: option '%s' needs a value\n", argv[i]);
            return TETHER__LAUNCH_EXIT_USAGE;
        } else if (strcmp(argv[i], "--bytes") == 0) {
            if (parse_bytes(argv[++i], &bytes) != 0)
                return TETHER__LAUNCH_EXIT_USAGE;
        } else {
            hosts |= strcmp(argv[i], "--hosts") == 0 || strcmp(argv[i], "--hostfile") == 0;
            i++;
        }
    }
    return hosts ? check_hosts(argc, argv, bytes, verbose) : check_here();
}
