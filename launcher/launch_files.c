/* launcher/launch_files.c - the files a job's ranks read: the per-rank hostfile and, for RDMA,
 * the device matrix; written into the job's temp dir and kept as text for remote hosts. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostfile/hostfile.h"
#include "job.h"
#include "launch_say.h"
#include "tether.h"

/* The whole of a small file we just wrote, as a string. */
static int slurp(tether__job_file *f)
{
    FILE *in = fopen(f->path, "rb");
    long len;
    if (!in || fseek(in, 0, SEEK_END) != 0 || (len = ftell(in)) < 0 ||
        fseek(in, 0, SEEK_SET) != 0 || !(f->text = malloc((size_t)len + 1)) ||
        fread(f->text, 1, (size_t)len, in) != (size_t)len) {
        tether__launch_say("cannot read back %s: %s", f->path, strerror(errno));
        if (in)
            fclose(in);
        return -1;
    }
    f->text[len] = '\0';
    fclose(in);
    return 0;
}

static tether__job_file *add_file(tether__job *job, tether__param var, const char *name)
{
    tether__job_file *f = &job->files[job->nfiles++];
    f->var = var;
    f->name = name;
    snprintf(f->path, sizeof f->path, "%s/%s", job->tmpdir, name);
    return f;
}

/* Host i's devices towards host j as the matrix wants them: null (none), a name, or a list. */
static json_t *device_entry(char **devs)
{
    json_t *list;
    if (!devs || !devs[0])
        return json_null();
    if (!devs[1])
        return json_string(devs[0]);
    list = json_array();
    for (int k = 0; list && devs[k]; k++)
        json_array_append_new(list, json_string(devs[k]));
    return list;
}

/* The N x N matrix TETHER_IBV_DEVICES names, from the launcher hostfile's "rdma" lists: entry
 * [i][j] is how rank i reaches rank j. One rank per host: the devices belong to hosts. */
static int write_devices(tether__job *job, const tether__job_file *f)
{
    json_t *rows = json_array();
    int rc;
    if (job->ranks_per_host != 1) {
        tether__launch_say("backend rdma with -n %d: RDMA devices are per host, so one rank per "
                           "host",
                           job->ranks_per_host);
        json_decref(rows);
        return -1;
    }
    for (int i = 0; rows && i < job->hosts.nhosts; i++) {
        const tether__launch_host *h = &job->hosts.hosts[i];
        json_t *row = json_array();
        for (int j = 0; row && j < job->hosts.nhosts; j++)
            json_array_append_new(row,
                                  device_entry(i == j || j >= h->nrdma ? NULL : h->rdma_devs[j]));
        json_array_append_new(rows, row);
    }
    rc = rows ? json_dump_file(rows, f->path, JSON_INDENT(2)) : -1;
    json_decref(rows);
    if (rc != 0)
        tether__launch_say("cannot write %s: %s", f->path, strerror(errno));
    return rc == 0 ? 0 : -1;
}

int tether__job_lists_rdma(const tether__job *job)
{
    int listed = 0;
    for (int i = 0; i < job->hosts.nhosts; i++)
        listed |= job->hosts.hosts[i].nrdma > 0;
    return listed;
}

static int wants_devices(const tether__job *job)
{
    return tether__job_lists_rdma(job) && job->backend && strcmp(job->backend, "rdma") == 0;
}

int tether__job_files(tether__job *job)
{
    tether__job_file *f = add_file(job, TETHER__P_HOSTFILE, "hostfile.json");
    if (tether__hostfile_write_ranks(f->path, &job->addrs) != 0) {
        tether__launch_say("cannot write the hostfile: %s", tether_last_error());
        return -1;
    }
    if (wants_devices(job) &&
        write_devices(job, add_file(job, TETHER__P_IBV_DEVICES, "devices.json")))
        return -1;
    for (int i = 0; i < job->nfiles; i++)
        if (slurp(&job->files[i]) != 0)
            return -1;
    return 0;
}
