/* launcher/job.h - the job plan, one per job: where the ranks run, what they listen on, its token,
 * temp dir and the files every rank reads (launch_plan.c, launch_hosts.c, launch_files.c). */
#ifndef TETHER_LAUNCHER_JOB_H
#define TETHER_LAUNCHER_JOB_H

#include <limits.h>

#include "core/params.h"
#include "hostfile/hostfile.h"
#include "launch_args.h"

#define TETHER__LAUNCH_TOKEN_BYTES 16
#define TETHER__LAUNCH_DEFAULT_PORT 5000 /* first port when a host is remote (mlx.launch's) */
#define TETHER__LAUNCH_MAX_FILES 2

/* A file every rank needs (the per-rank hostfile, the RDMA device matrix). Local ranks read the
 * copy in the job's temp dir; a remote rank gets the text in its command and writes its own. */
typedef struct tether__job_file {
    tether__param var;   /* the setting that tells ranks its path (TETHER__P_HOSTFILE); set
                            under its name and its first alias, MLX's */
    const char *name;    /* file name: "hostfile.json" */
    char path[PATH_MAX]; /* the local copy */
    char *text;          /* its contents */
} tether__job_file;

typedef struct tether__job {
    const tether__launch_opts *opts;
    tether__launch_hosts hosts; /* where ranks run; a local job has one host: this machine */
    int *host_local;            /* per host: 1 when it is this machine (started without ssh) */
    int nranks;
    int ranks_per_host;       /* rank r runs on host r / ranks_per_host */
    const char *backend;      /* --backend, else the hostfile's, else NULL */
    tether__rank_hosts addrs; /* what every rank listens on: the per-rank hostfile */
    int nfiles;
    tether__job_file files[TETHER__LAUNCH_MAX_FILES];
    char tmpdir[PATH_MAX - 32]; /* private, mode 0700; "" until made (room for a file name) */
    char cwd[PATH_MAX];         /* the launcher's working directory ("" if unknown) */
    char token[2 * TETHER__LAUNCH_TOKEN_BYTES + 1];
    char master_addr[TETHER__HOST_MAX];
    int master_port;
} tether__job;

/* Hosts, ports, token, temp dir and files. On failure prints why and returns -1; call
 * tether__job_cleanup either way. */
int tether__job_plan(tether__job *job, const tether__launch_opts *o);
/* Remove the temp dir and free the plan; safe on a zeroed or half-made job. */
void tether__job_cleanup(tether__job *job);
/* Fill job->hosts and job->host_local from --hostfile, --hosts, or this machine. */
int tether__job_hosts(tether__job *job);
/* Write the job's files into its temp dir (the per-rank hostfile; the RDMA device matrix when
 * the backend is rdma and the hosts list devices) and keep their text. */
int tether__job_files(tether__job *job);
/* 1 if a host of the launcher hostfile lists RDMA devices ("rdma"): MLX's JACCL hostfiles, which
 * need no "backend" to mean rdma. */
int tether__job_lists_rdma(const tether__job *job);
/* 1 if an ssh destination is this machine (see launch_hosts.c for the rule). */
int tether__host_is_local(const char *ssh);
/* The host rank r runs on. */
static inline int tether__rank_host(const tether__job *job, int r)
{
    return r / job->ranks_per_host;
}

#endif
