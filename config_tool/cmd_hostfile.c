/* config_tool/cmd_hostfile.c - `tether hostfile check F`: which of the three hostfile forms F is,
 * and whether it loads, with the position of the problem when it does not. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "config_tool/config_say.h"
#include "core/errors.h"
#include "hostfile/hostfile.h"

typedef enum { FORM_GUESS, FORM_LAUNCH, FORM_RANKS, FORM_DEVICES } form;

static const char usage_text[] =
    "usage: tether hostfile check FILE [--form launch|ranks|devices]\n"
    "\n"
    "Check a hostfile: the launcher form ([{\"ssh\": ...}] or {\"hosts\": [...]}), the per-rank\n"
    "form ([[\"ip:port\", ...], ...], TETHER_HOSTFILE) or a device matrix (TETHER_IBV_DEVICES).\n"
    "The form is recognised from the content unless --form names it.\n";

/* A host, with or without its port: a colon ("ip:port", "[v6]:port"), a dot (an IPv4 address or
 * a dotted name) or "localhost". Device names ("rdma_en2", "mlx5_0") have neither. */
static int looks_like_host(const char *s)
{
    return strpbrk(s, ":.") != NULL || strcmp(s, "localhost") == 0;
}

/* A per-rank row holds "ip:port" strings; a device matrix row holds null, lists and device names.
 * One host in the row makes it a per-rank row, so that an address without its port
 * ([["127.0.0.1"]]) is reported as lacking it, not as a device linking rank 0 to itself. */
static form guess_row(const json_t *row)
{
    size_t i;
    const json_t *v;
    form f = FORM_RANKS;

    json_array_foreach(row, i, v) {
        if (json_is_string(v) && looks_like_host(json_string_value(v)))
            return FORM_RANKS;
        f = FORM_DEVICES;
    }
    return f;
}

/* From the content; anything odd goes to the parser that explains it best. */
static form guess(const char *path)
{
    json_t *root = json_load_file(path, 0, NULL);
    const json_t *first = json_array_get(root, 0);
    form f = FORM_RANKS; /* unreadable or syntax error: any parser says so with the position */

    if (json_is_object(root) || json_is_object(first))
        f = FORM_LAUNCH;
    else if (json_is_array(first))
        f = guess_row(first);
    json_decref(root);
    return f;
}

static int check_launch(const char *path)
{
    tether__launch_hosts h;
    int rdma = 0;

    if (tether__hostfile_load_launch(path, &h) < 0)
        return -1;
    for (int i = 0; i < h.nhosts; i++)
        rdma |= h.hosts[i].nrdma > 0;
    printf("%s: launcher hostfile, %d host(s), backend %s, %d env(s)%s: OK\n", path, h.nhosts,
           h.backend[0] ? h.backend : "not set", h.nenvs, rdma ? ", rdma devices" : "");
    for (int i = 0; i < h.nhosts; i++) {
        printf("  %d: %s", i, h.hosts[i].ssh);
        for (int j = 0; j < h.hosts[i].nips; j++)
            printf("%s%s", j ? ", " : " ips ", h.hosts[i].ips[j]);
        printf("\n");
    }
    tether__launch_hosts_free(&h);
    return 0;
}

static int check_ranks(const char *path)
{
    tether__rank_hosts h;
    int total = 0;

    if (tether__hostfile_load_ranks(path, &h) < 0)
        return -1;
    for (int r = 0; r < h.nranks; r++)
        total += h.naddrs[r];
    printf("%s: per-rank hostfile, %d rank(s), %d address(es): OK\n", path, h.nranks, total);
    tether__rank_hosts_free(&h);
    return 0;
}

static int check_devices(const char *path)
{
    tether__device_matrix m;
    int cables = 0;

    if (tether__hostfile_load_devices(path, &m) < 0)
        return -1;
    for (int i = 0; i < m.n; i++)
        for (int j = i + 1; j < m.n; j++)
            for (char **d = m.devs[i][j]; *d; d++)
                cables++;
    printf("%s: device matrix, %d x %d, %d cable(s): OK\n", path, m.n, m.n, cables);
    tether__device_matrix_free(&m);
    return 0;
}

static int parse_form(const char *s, form *out)
{
    static const char *const names[] = {"", "launch", "ranks", "devices"};

    for (int f = FORM_LAUNCH; f <= FORM_DEVICES; f++)
        if (strcmp(s, names[f]) == 0) {
            *out = (form)f;
            return 0;
        }
    fprintf(stderr, "tether hostfile: --form %s: expected launch, ranks or devices\n", s);
    return -1;
}

int tether__cmd_hostfile(int argc, char **argv)
{
    const char *path = NULL;
    form f = FORM_GUESS;
    int rc;

    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (argc < 3 || strcmp(argv[1], "check") != 0) {
        fputs(usage_text, stderr);
        return CT_EXIT_USAGE;
    }
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--form") == 0 && i + 1 < argc) {
            if (parse_form(argv[++i], &f) < 0)
                return CT_EXIT_USAGE;
        } else if (!path && argv[i][0] != '-') {
            path = argv[i];
        } else {
            fprintf(stderr, "tether hostfile: unexpected argument %s\n%s", argv[i], usage_text);
            return CT_EXIT_USAGE;
        }
    }
    if (!path) {
        fputs(usage_text, stderr);
        return CT_EXIT_USAGE;
    }
    if (f == FORM_GUESS)
        f = guess(path);
    tether__clear_error();
    rc = f == FORM_LAUNCH  ? check_launch(path)
         : f == FORM_RANKS ? check_ranks(path)
                           : check_devices(path);
    if (rc < 0)
        fprintf(stderr, "%s\n", tether_last_error());
    return rc < 0 ? CT_EXIT_FAILED : 0;
}
