/* hostfile/launch_read.c - reading the launcher hostfile: MLX's list form and object form, read
 * and checked; every bad host and key is reported, not only the first. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/log.h"
#include "core/registry.h"
#include "hostfile/hf_json.h"
#include "hostfile/hostfile.h"

/* The backend a launcher file names, as tether_init takes it (MLX's JACCL is our rdma); absent is
 * "". */
static int parse_backend(const json_t *v, const char *name, tether__launch_hosts *out)
{
    const char *meant;
    if (!json_is_string(v))
        return tether__fail(TETHER_ECONFIG, "%s: \"backend\": expected a string, got %s", name,
                            tether__hf_type_name(v));
    if (!*json_string_value(v))
        meant = "";
    else if (!(meant = tether__backend_canonical(json_string_value(v))))
        return tether__fail(TETHER_ECONFIG,
                            "%s: \"backend\": unknown backend \"%.*s\"; expected "
                            "%s",
                            name, HF_QUOTE_MAX, json_string_value(v), tether__backend_names());
    snprintf(out->backend, sizeof out->backend, "%s", meant);
    return TETHER_OK;
}

/* "KEY=VALUE" with KEY a shell variable name, so the launcher can export it as is. */
static int check_env(const char *s, const char *where)
{
    const char *eq = strchr(s, '=');
    int ok = eq && eq != s && !isdigit((unsigned char)s[0]);

    for (const char *p = s; ok && p < eq; p++)
        ok = isalnum((unsigned char)*p) || *p == '_';
    if (!ok)
        return tether__fail(TETHER_ECONFIG,
                            "%s: \"%.*s\" is not KEY=VALUE with KEY a variable "
                            "name (letters, digits, '_')",
                            where, HF_QUOTE_MAX, s);
    return TETHER_OK;
}

static int parse_envs(const json_t *v, const char *name, tether__launch_hosts *out)
{
    char where[HF_WHERE_MAX];
    size_t i;
    const json_t *e;

    if (!json_is_array(v))
        return tether__fail(TETHER_ECONFIG,
                            "%s: \"envs\": expected a list of \"KEY=VALUE\" "
                            "strings, got %s",
                            name, tether__hf_type_name(v));
    TRY(tether__hf_calloc(json_array_size(v), sizeof *out->envs, name, &out->envs));
    json_array_foreach(v, i, e) {
        snprintf(where, sizeof where, "%s: envs[%zu]", name, i);
        if (!json_is_string(e))
            return tether__fail(TETHER_ECONFIG, "%s: expected a \"KEY=VALUE\" string, got %s",
                                where, tether__hf_type_name(e));
        TRY(check_env(json_string_value(e), where));
        TRY(tether__hf_strdup(json_string_value(e), name, &out->envs[i]));
        out->nenvs++;
    }
    return TETHER_OK;
}

/* What ssh is given: one word, and never an option (a leading '-' would be read as one). */
static int parse_ssh(const json_t *v, const char *where, tether__launch_host *h)
{
    const char *s;

    if (!v)
        return tether__fail(TETHER_ECONFIG, "%s: no \"ssh\"; expected the host name to ssh to",
                            where);
    if (!json_is_string(v))
        return tether__fail(TETHER_ECONFIG, "%s: \"ssh\": expected a string, got %s", where,
                            tether__hf_type_name(v));
    s = json_string_value(v);
    if (s[0] == '\0' || s[0] == '-' || strlen(s) >= sizeof h->ssh)
        return tether__fail(TETHER_ECONFIG,
                            "%s: \"ssh\": \"%.*s\" is %s; expected \"host\" or "
                            "\"user@host\"",
                            where, HF_QUOTE_MAX, s,
                            s[0] == '\0'  ? "empty"
                            : s[0] == '-' ? "an ssh option"
                                          : "too long");
    for (const char *p = s; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return tether__fail(TETHER_ECONFIG,
                                "%s: \"ssh\": \"%.*s\" contains a space or control "
                                "character; expected \"host\" or \"user@host\"",
                                where, HF_QUOTE_MAX, s);
    memcpy(h->ssh, s, strlen(s) + 1);
    return TETHER_OK;
}

static int parse_ips(const json_t *v, const char *where, tether__launch_host *h)
{
    char sub[HF_WHERE_MAX + 32];
    size_t i;
    const json_t *e;

    if (!json_is_array(v))
        return tether__fail(TETHER_ECONFIG, "%s: \"ips\": expected a list of IP addresses, got %s",
                            where, tether__hf_type_name(v));
    TRY(tether__hf_calloc(json_array_size(v), sizeof *h->ips, where, &h->ips));
    json_array_foreach(v, i, e) {
        snprintf(sub, sizeof sub, "%s, ips[%zu]", where, i);
        if (!json_is_string(e))
            return tether__fail(TETHER_ECONFIG, "%s: expected an IP address string, got %s", sub,
                                tether__hf_type_name(e));
        TRY(tether__hf_check_host(json_string_value(e), 1, sub));
        for (size_t k = 0; k < i; k++)
            if (strcmp(h->ips[k], json_string_value(e)) == 0)
                return tether__fail(TETHER_ECONFIG, "%s: \"%s\" is also ips[%zu]", sub, h->ips[k],
                                    k);
        snprintf(h->ips[i], sizeof h->ips[i], "%s", json_string_value(e));
        h->nips++;
    }
    return TETHER_OK;
}

static int parse_rdma(const json_t *v, const char *where, tether__launch_host *h)
{
    char sub[HF_WHERE_MAX + 32];
    size_t n = json_array_size(v), j;
    const json_t *e;

    if (!json_is_array(v))
        return tether__fail(TETHER_ECONFIG,
                            "%s: \"rdma\": expected a list with one entry per "
                            "host (null, a device or a list of devices), got %s",
                            where, tether__hf_type_name(v));
    TRY(tether__hf_calloc(n, sizeof *h->rdma, where, &h->rdma));
    TRY(tether__hf_calloc(n, sizeof *h->rdma_devs, where, &h->rdma_devs));
    h->nrdma = (int)n;
    json_array_foreach(v, j, e) {
        snprintf(sub, sizeof sub, "%s, rdma[%zu]", where, j);
        TRY(tether__hf_parse_devlist(e, sub, &h->rdma_devs[j]));
        h->rdma[j] = h->rdma_devs[j][0];
    }
    return TETHER_OK;
}

static int parse_host(const json_t *v, const char *name, int i, tether__launch_host *h)
{
    char where[HF_WHERE_MAX];
    const char *key;
    const json_t *val;

    snprintf(where, sizeof where, "%s: host %d", name, i);
    if (!json_is_object(v))
        return tether__fail(TETHER_ECONFIG,
                            "%s: expected an object {\"ssh\": ..., \"ips\": "
                            "[...]}, got %s",
                            where, tether__hf_type_name(v));
    json_object_foreach((json_t *)v, key, val)
        if (strcmp(key, "ssh") && strcmp(key, "ips") && strcmp(key, "rdma"))
            return tether__fail(TETHER_ECONFIG,
                                "%s: unknown key \"%.*s\"; expected \"ssh\", "
                                "\"ips\" and \"rdma\"",
                                where, HF_QUOTE_MAX, key);
    TRY(parse_ssh(json_object_get(v, "ssh"), where, h));
    if ((val = json_object_get(v, "ips")))
        TRY(parse_ips(val, where, h));
    if ((val = json_object_get(v, "rdma")))
        TRY(parse_rdma(val, where, h));
    return TETHER_OK;
}

/* "rdma" is all or nothing: empty everywhere (no RDMA), or one entry per host on every host. */
static int check_rdma(const tether__launch_hosts *out, const char *name)
{
    char ****rows;
    int first = 0, rc;

    while (first < out->nhosts && out->hosts[first].nrdma == 0)
        first++;
    if (first == out->nhosts)
        return TETHER_OK;
    for (int i = 0; i < out->nhosts; i++)
        if (out->hosts[i].nrdma != out->nhosts)
            return tether__fail(TETHER_ECONFIG,
                                "%s: host %d: \"rdma\" has %d entries; expected %d "
                                "(one per host, null for itself) since host %d has an \"rdma\" "
                                "list",
                                name, i, out->hosts[i].nrdma, out->nhosts, first);
    TRY(tether__hf_calloc((unsigned)out->nhosts, sizeof *rows, name, &rows));
    for (int i = 0; i < out->nhosts; i++)
        rows[i] = out->hosts[i].rdma_devs;
    rc = tether__hf_check_links(rows, out->nhosts, name, HF_RDMA_LISTS);
    free(rows);
    return rc;
}

/* Every host is read, and each bad one noted in pb: a check names them all. */
static void parse_hosts(const json_t *v, const char *name, tether__launch_hosts *out,
                        tether__hf_problems *pb)
{
    size_t i;
    const json_t *e;
    int before = pb->n;

    if (!v) {
        tether__hf_note(pb, tether__fail(TETHER_ECONFIG,
                                         "%s: no \"hosts\"; expected {\"hosts\": "
                                         "[{\"ssh\": ...}, ...]}",
                                         name));
        return;
    }
    if (!json_is_array(v)) {
        tether__hf_note(pb, tether__fail(TETHER_ECONFIG,
                                         "%s: \"hosts\": expected a list of host "
                                         "objects, got %s",
                                         name, tether__hf_type_name(v)));
        return;
    }
    if (json_array_size(v) == 0) {
        tether__hf_note(pb, tether__fail(TETHER_ECONFIG,
                                         "%s: the list of hosts is empty; expected "
                                         "one {\"ssh\": ..., \"ips\": [...]} per host",
                                         name));
        return;
    }
    if (tether__hf_note(
            pb, tether__hf_calloc(json_array_size(v), sizeof *out->hosts, name, &out->hosts)) < 0)
        return;
    out->nhosts = (int)json_array_size(v);
    json_array_foreach(v, i, e)
        tether__hf_note(pb, parse_host(e, name, (int)i, &out->hosts[i]));
    if (pb->n == before) /* the rdma lists are compared across hosts: only once each one read */
        tether__hf_note(pb, check_rdma(out, name));
}

static int parse_object(const json_t *root, const char *name, tether__launch_hosts *out)
{
    tether__hf_problems pb = {0};
    const char *key;
    const json_t *val;

    json_object_foreach((json_t *)root, key, val)
        if (strcmp(key, "backend") && strcmp(key, "envs") && strcmp(key, "hosts"))
            tether__hf_note(&pb, tether__fail(TETHER_ECONFIG,
                                              "%s: unknown key \"%.*s\"; "
                                              "expected \"backend\", \"envs\" and \"hosts\"",
                                              name, HF_QUOTE_MAX, key));
    if ((val = json_object_get(root, "backend")))
        tether__hf_note(&pb, parse_backend(val, name, out));
    if ((val = json_object_get(root, "envs")))
        tether__hf_note(&pb, parse_envs(val, name, out));
    parse_hosts(json_object_get(root, "hosts"), name, out, &pb);
    return tether__hf_problems_end(&pb);
}

static int from_json(const json_t *root, const char *name, void *result)
{
    tether__hf_problems pb = {0};

    if (json_is_array(root)) {
        parse_hosts(root, name, result, &pb);
        return tether__hf_problems_end(&pb);
    }
    if (json_is_object(root))
        return parse_object(root, name, result);
    return tether__fail(TETHER_ECONFIG,
                        "%s: expected a list of hosts or an object with "
                        "\"hosts\", got %s",
                        name, tether__hf_type_name(root));
}

static void release(void *h)
{
    tether__launch_hosts_free(h);
}

int tether__hostfile_parse_launch(const char *json, const char *name, tether__launch_hosts *out)
{
    return tether__hf_read(json, 0, name ? name : "hostfile", from_json, release, out, sizeof *out);
}

int tether__hostfile_load_launch(const char *path, tether__launch_hosts *out)
{
    return tether__hf_read(path, 1, NULL, from_json, release, out, sizeof *out);
}

static void host_free(tether__launch_host *h)
{
    free(h->ips);
    for (int j = 0; h->rdma_devs && j < h->nrdma; j++)
        tether__hf_devlist_free(h->rdma_devs[j]);
    free(h->rdma_devs);
    free(h->rdma); /* its entries point into rdma_devs */
}

void tether__launch_hosts_free(tether__launch_hosts *h)
{
    if (!h)
        return;
    for (int i = 0; h->hosts && i < h->nhosts; i++)
        host_free(&h->hosts[i]);
    free(h->hosts);
    for (int i = 0; h->envs && i < h->nenvs; i++)
        free(h->envs[i]);
    free(h->envs);
    memset(h, 0, sizeof *h);
}
