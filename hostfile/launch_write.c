/* hostfile/launch_write.c - writing a launcher hostfile in MLX's object form. */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "hostfile/hf_json.h"
#include "hostfile/hostfile.h"

/* null, "dev", or ["dev", ...] for several cables: the shapes MLX reads. */
static json_t *devlist_json(char *const *list)
{
    size_t n = tether__hf_devlist_len(list);
    json_t *arr;

    if (n == 0)
        return json_null();
    if (n == 1)
        return json_string(list[0]);
    arr = json_array();
    for (size_t k = 0; arr && k < n; k++)
        json_array_append_new(arr, json_string(list[k]));
    return arr;
}

static json_t *host_json(const tether__launch_host *h)
{
    json_t *ips = json_array(), *rdma = json_array();

    for (int i = 0; ips && i < h->nips; i++)
        json_array_append_new(ips, json_string(h->ips[i]));
    for (int j = 0; rdma && j < h->nrdma; j++)
        json_array_append_new(rdma, h->rdma_devs ? devlist_json(h->rdma_devs[j])
                                    : h->rdma[j] ? json_string(h->rdma[j])
                                                 : json_null());
    return json_pack("{s:s, s:o, s:o}", "ssh", h->ssh, "ips", ips, "rdma", rdma);
}

static json_t *file_json(const tether__launch_hosts *h)
{
    json_t *envs = json_array(), *hosts = json_array();

    for (int i = 0; envs && i < h->nenvs; i++)
        json_array_append_new(envs, json_string(h->envs[i]));
    for (int i = 0; hosts && i < h->nhosts; i++)
        json_array_append_new(hosts, host_json(&h->hosts[i]));
    return json_pack("{s:s, s:o, s:o}", "backend", h->backend, "envs", envs, "hosts", hosts);
}

int tether__hostfile_format_launch(const tether__launch_hosts *h, char **out)
{
    json_t *root;
    char *text;
    size_t len;

    if (!h || !out || h->nhosts < 1)
        return tether__fail(TETHER_EINVAL, "tether__hostfile_format_launch: no hosts to write");
    root = file_json(h);
    text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    if (!text)
        return tether__fail(TETHER_ENOMEM, "out of memory formatting a launcher hostfile");
    /* json_dumps ends without a newline; a text file should end with one. */
    len = strlen(text);
    *out = malloc(len + 2);
    if (*out) {
        memcpy(*out, text, len);
        memcpy(*out + len, "\n", 2);
    }
    free(text);
    return *out ? TETHER_OK
                : tether__fail(TETHER_ENOMEM, "out of memory formatting a launcher hostfile");
}

int tether__hostfile_write_launch(const char *path, const tether__launch_hosts *h)
{
    char *text;
    int rc;

    if (!path)
        return tether__fail(TETHER_EINVAL, "tether__hostfile_write_launch: path is NULL");
    TRY(tether__hostfile_format_launch(h, &text));
    rc = tether__hf_write_file(path, text);
    free(text);
    return rc;
}
