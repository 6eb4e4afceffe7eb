/* hostfile/hostfile.h - the JSON hostfiles (MLX-compatible), parsed with jansson.
 *
 * Three formats:
 * - per-rank (what a rank reads, TETHER_HOSTFILE / MLX_HOSTFILE): a JSON list with one entry per
 *   rank, each a list of "ip:port" strings that rank listens on, e.g. [["10.0.0.1:5000"], ...].
 * - launcher (what `tether launch --hostfile` and `tether config` read/write): MLX's list form
 *   [{"ssh": "h1", "ips": ["10.0.0.1"]}, ...] or object form {"backend": "ring", "envs": ["K=V"],
 *   "hosts": [{"ssh": ..., "ips": [...], "rdma": [...]}]}.
 * - device matrix (TETHER_IBV_DEVICES): N x N; entry [i][j] is null (i == j or no link), a device
 *   name, or a list of device names (several cables).
 * Every error is TETHER_ECONFIG with a message naming the file, the position (rank, index, line
 * and column for JSON syntax) and what was expected.
 */
#ifndef TETHER_HOSTFILE_H
#define TETHER_HOSTFILE_H

#include <stddef.h>

#define TETHER__HOST_MAX 256

typedef struct tether__hostaddr {
    char host[TETHER__HOST_MAX]; /* IPv4 dotted quad or a host name, without brackets */
    int port;                    /* 1..65535 */
} tether__hostaddr;

/* Per-rank hostfile: rank r listens on addrs[r][0..naddrs[r]-1]. */
typedef struct tether__rank_hosts {
    int nranks;
    int *naddrs;
    tether__hostaddr **addrs;
} tether__rank_hosts;

int tether__hostfile_load_ranks(const char *path, tether__rank_hosts *out);
/* The same from a JSON text; name is used in messages in place of a path. */
int tether__hostfile_parse_ranks(const char *json, const char *name, tether__rank_hosts *out);
void tether__rank_hosts_free(tether__rank_hosts *h);
/* Write h as a per-rank hostfile (MLX format). */
int tether__hostfile_write_ranks(const char *path, const tether__rank_hosts *h);

/* Parse "host:port" (IPv4, name, or "[v6]:port"); TETHER_ECONFIG naming what (e.g. "rank 2 address
 * 1 of hosts.json") when malformed. */
int tether__hostaddr_parse(const char *text, const char *what, tether__hostaddr *out);

/* Launcher hostfile. */
typedef struct tether__launch_host {
    char ssh[TETHER__HOST_MAX]; /* how to reach it with ssh ("user@host", "host") */
    int nips;
    char (*ips)[TETHER__HOST_MAX];
    int nrdma;
    char **rdma;       /* rdma device per peer (may be NULL entries), MLX's "rdma" list */
    char ***rdma_devs; /* per peer: NULL-terminated list of every device (MLX allows a list
                          per peer for several cables); rdma[j] is its first entry */
} tether__launch_host;

typedef struct tether__launch_hosts {
    char backend[32]; /* "" when absent; MLX's "jaccl" and "jaccl-ring" read as "rdma" */
    int nenvs;
    char **envs; /* "KEY=VALUE" */
    int nhosts;
    tether__launch_host *hosts;
} tether__launch_hosts;

int tether__hostfile_load_launch(const char *path, tether__launch_hosts *out);
int tether__hostfile_parse_launch(const char *json, const char *name, tether__launch_hosts *out);
void tether__launch_hosts_free(tether__launch_hosts *h);
/* h as MLX's object form {"backend", "envs", "hosts": [{"ssh", "ips", "rdma"}]}, 2-space indent,
 * newline-terminated: malloc'd text in *out (free it), or written to path. */
int tether__hostfile_format_launch(const tether__launch_hosts *h, char **out);
int tether__hostfile_write_launch(const char *path, const tether__launch_hosts *h);

/* The devices (cables) linking one rank to another: names, NULL-terminated; empty: no link. */
typedef char **tether__device_list;

/* Device matrix for n ranks. */
typedef struct tether__device_matrix {
    int n;
    tether__device_list **devs; /* devs[i][j]: the devices linking rank i to rank j */
} tether__device_matrix;

int tether__hostfile_load_devices(const char *path, tether__device_matrix *out);
int tether__hostfile_parse_devices(const char *json, const char *name, tether__device_matrix *out);
void tether__device_matrix_free(tether__device_matrix *m);

#endif
