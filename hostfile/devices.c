/* hostfile/devices.c - the RDMA device matrix (TETHER_IBV_DEVICES, MLX_IBV_DEVICES): read it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "hostfile/hf_json.h"
#include "hostfile/hostfile.h"

static int parse_row(const json_t *row, const char *name, int i, tether__device_matrix *m)
{
    char where[HF_WHERE_MAX];
    size_t j;
    const json_t *cell;

    if (!json_is_array(row))
        return tether__fail(TETHER_ECONFIG,
                            "%s: row %d: expected a list of %d entries (null or "
                            "device names, one per rank), got %s",
                            name, i, m->n, tether__hf_type_name(row));
    if (json_array_size(row) != (size_t)m->n)
        return tether__fail(TETHER_ECONFIG,
                            "%s: row %d has %zu entries; expected %d (one per "
                            "rank, as many as there are rows)",
                            name, i, json_array_size(row), m->n);
    TRY(tether__hf_calloc((size_t)m->n, sizeof *m->devs[i], name, &m->devs[i]));
    json_array_foreach(row, j, cell) {
        snprintf(where, sizeof where, "%s: row %d, column %zu", name, i, j);
        TRY(tether__hf_parse_devlist(cell, where, &m->devs[i][j]));
    }
    return TETHER_OK;
}

static int from_json(const json_t *root, const char *name, void *result)
{
    tether__device_matrix *m = result;
    tether__hf_problems pb = {0};
    size_t i;
    const json_t *row;

    if (!json_is_array(root))
        return tether__fail(TETHER_ECONFIG,
                            "%s: expected an N x N list of lists (entry [i][j]: "
                            "the device linking rank i to rank j), got %s",
                            name, tether__hf_type_name(root));
    if (json_array_size(root) == 0)
        return tether__fail(TETHER_ECONFIG,
                            "%s: the device matrix is empty; expected one row "
                            "per rank",
                            name);
    TRY(tether__hf_calloc(json_array_size(root), sizeof *m->devs, name, &m->devs));
    m->n = (int)json_array_size(root);
    json_array_foreach(root, i, row) /* every row, each bad one noted: a check names them all */
        tether__hf_note(&pb, parse_row(row, name, (int)i, m));
    if (pb.n == 0) /* links are compared across rows: only once each one read */
        tether__hf_note(&pb, tether__hf_check_links(m->devs, m->n, name, HF_DEVICE_MATRIX));
    return tether__hf_problems_end(&pb);
}

static void release(void *m)
{
    tether__device_matrix_free(m);
}

int tether__hostfile_parse_devices(const char *json, const char *name, tether__device_matrix *out)
{
    return tether__hf_read(json, 0, name ? name : "device matrix", from_json, release, out,
                           sizeof *out);
}

int tether__hostfile_load_devices(const char *path, tether__device_matrix *out)
{
    return tether__hf_read(path, 1, NULL, from_json, release, out, sizeof *out);
}

void tether__device_matrix_free(tether__device_matrix *m)
{
    if (!m)
        return;
    for (int i = 0; m->devs && i < m->n; i++) {
        for (int j = 0; m->devs[i] && j < m->n; j++)
            tether__hf_devlist_free(m->devs[i][j]);
        free(m->devs[i]);
    }
    free(m->devs);
    memset(m, 0, sizeof *m);
}
