/* hostfile/ranks.c - the per-rank hostfile (MLX's [["ip:port", ...], ...]): read, check, write. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "hostfile/hf_json.h"
#include "hostfile/hostfile.h"

static int parse_rank(const json_t *entry, const char *name, int r, tether__rank_hosts *h)
{
    char where[HF_WHERE_MAX];
    size_t j;
    const json_t *a;

    if (!json_is_array(entry))
        return tether__fail(TETHER_ECONFIG,
                            "%s: rank %d: expected a list of \"ip:port\" strings, "
                            "got %s",
                            name, r, tether__hf_type_name(entry));
    if (json_array_size(entry) == 0)
        return tether__fail(TETHER_ECONFIG,
                            "%s: rank %d: empty list; expected at least one "
                            "\"ip:port\" the rank listens on",
                            name, r);
    TRY(tether__hf_calloc(json_array_size(entry), sizeof **h->addrs, name, &h->addrs[r]));
    json_array_foreach(entry, j, a) {
        snprintf(where, sizeof where, "%s: rank %d, address %zu", name, r, j);
        if (!json_is_string(a))
            return tether__fail(TETHER_ECONFIG, "%s: expected an \"ip:port\" string, got %s", where,
                                tether__hf_type_name(a));
        TRY(tether__hostaddr_parse(json_string_value(a), where, &h->addrs[r][j]));
        h->naddrs[r]++;
    }
    return TETHER_OK;
}

static int same_addr(const tether__hostaddr *a, const tether__hostaddr *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

/* One listen address of the table, where it is: sorted by address, then by place in the file. */
typedef struct addr_ref {
    const tether__hostaddr *a;
    int r, j;
} addr_ref;

static int by_addr_then_place(const void *x, const void *y)
{
    const addr_ref *p = x, *q = y;
    if (p->a->port != q->a->port)
        return p->a->port < q->a->port ? -1 : 1;
    int c = strcmp(p->a->host, q->a->host);
    if (c)
        return c;
    return p->r != q->r ? (p->r < q->r ? -1 : 1) : (p->j > q->j) - (p->j < q->j);
}

/* Two ranks (or one rank twice) on one address cannot both listen there. Names and IPs that
 * resolve to the same machine are not caught here: the listener reports EADDRINUSE. Sorted, so
 * equal addresses sit together: comparing every pair took minutes for a very large file (measured:
 * docs/perf/notes.md, hostfile/ranks.c).
 * Named: the first address in the file that repeats an earlier one, and that one. */
static int check_duplicates(const tether__rank_hosts *h, const char *name)
{
    size_t n = 0, k = 0;
    for (int r = 0; r < h->nranks; r++)
        n += (size_t)h->naddrs[r];
    addr_ref *refs = malloc((n ? n : 1) * sizeof *refs);
    if (!refs)
        return tether__fail(TETHER_ENOMEM, "%s: out of memory checking %zu addresses", name, n);
    for (int r = 0; r < h->nranks; r++)
        for (int j = 0; j < h->naddrs[r]; j++)
            refs[k++] = (addr_ref){&h->addrs[r][j], r, j};
    qsort(refs, n, sizeof *refs, by_addr_then_place);
    const addr_ref *dup = NULL, *orig = NULL;
    for (size_t g = 0, e; g < n; g = e) { /* g..e-1: one address, in file order */
        for (e = g + 1; e < n && same_addr(refs[e].a, refs[g].a); e++)
            ;
        if (e - g > 1 && (!dup || refs[g + 1].r < dup->r ||
                          (refs[g + 1].r == dup->r && refs[g + 1].j < dup->j))) {
            dup = &refs[g + 1];
            orig = &refs[g];
        }
    }
    int rc = TETHER_OK;
    if (dup)
        rc = tether__fail(TETHER_ECONFIG,
                          "%s: rank %d, address %d: \"%s:%d\" is also rank %d, "
                          "address %d; every listen address must be unique",
                          name, dup->r, dup->j, dup->a->host, dup->a->port, orig->r, orig->j);
    free(refs);
    return rc;
}

static int from_json(const json_t *root, const char *name, void *result)
{
    tether__rank_hosts *out = result;
    tether__hf_problems pb = {0};
    size_t r;
    const json_t *entry;

    if (!json_is_array(root))
        return tether__fail(TETHER_ECONFIG,
                            "%s: expected a list with one entry per rank, each a "
                            "list of \"ip:port\", got %s",
                            name, tether__hf_type_name(root));
    if (json_array_size(root) == 0)
        return tether__fail(TETHER_ECONFIG,
                            "%s: the list of ranks is empty; expected one entry "
                            "per rank",
                            name);
    TRY(tether__hf_calloc(json_array_size(root), sizeof *out->naddrs, name, &out->naddrs));
    TRY(tether__hf_calloc(json_array_size(root), sizeof *out->addrs, name, &out->addrs));
    out->nranks = (int)json_array_size(root);
    json_array_foreach(root, r, entry) /* every rank, each bad one noted: a check names them all */
        tether__hf_note(&pb, parse_rank(entry, name, (int)r, out));
    if (pb.n == 0) /* duplicates are looked for across ranks: only once each one read */
        tether__hf_note(&pb, check_duplicates(out, name));
    return tether__hf_problems_end(&pb);
}

static void release(void *h)
{
    tether__rank_hosts_free(h);
}

int tether__hostfile_parse_ranks(const char *json, const char *name, tether__rank_hosts *out)
{
    return tether__hf_read(json, 0, name ? name : "hostfile", from_json, release, out, sizeof *out);
}

int tether__hostfile_load_ranks(const char *path, tether__rank_hosts *out)
{
    return tether__hf_read(path, 1, NULL, from_json, release, out, sizeof *out);
}

void tether__rank_hosts_free(tether__rank_hosts *h)
{
    if (!h)
        return;
    for (int r = 0; h->addrs && r < h->nranks; r++)
        free(h->addrs[r]);
    free(h->addrs);
    free(h->naddrs);
    memset(h, 0, sizeof *h);
}

/* An in-memory table written out must read back: same checks as a file. */
static int check_table(const char *path, const tether__rank_hosts *h)
{
    if (!h || h->nranks < 1 || !h->naddrs || !h->addrs)
        return tether__fail(TETHER_EINVAL, "%s: no ranks to write", path);
    for (int r = 0; r < h->nranks; r++) {
        if (h->naddrs[r] < 1)
            return tether__fail(TETHER_EINVAL, "%s: rank %d has no address to write", path, r);
        for (int j = 0; j < h->naddrs[r]; j++)
            if (h->addrs[r][j].port < 1 || h->addrs[r][j].port > 65535)
                return tether__fail(TETHER_EINVAL,
                                    "%s: rank %d, address %d: port %d is not "
                                    "1-65535",
                                    path, r, j, h->addrs[r][j].port);
    }
    return TETHER_OK;
}

/* One rank per line, as MLX's examples show it. IPv6 hosts get their brackets back. */
static void format_table(FILE *f, const tether__rank_hosts *h)
{
    fputs("[\n", f);
    for (int r = 0; r < h->nranks; r++) {
        fputs("  [", f);
        for (int j = 0; j < h->naddrs[r]; j++) {
            const tether__hostaddr *a = &h->addrs[r][j];
            int v6 = strchr(a->host, ':') != NULL;
            fprintf(f, "%s\"%s%s%s:%d\"", j ? ", " : "", v6 ? "[" : "", a->host, v6 ? "]" : "",
                    a->port);
        }
        fprintf(f, "]%s\n", r + 1 < h->nranks ? "," : "");
    }
    fputs("]\n", f);
}

int tether__hostfile_write_ranks(const char *path, const tether__rank_hosts *h)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem;
    int rc;

    if (!path)
        return tether__fail(TETHER_EINVAL, "tether__hostfile_write_ranks: path is NULL");
    TRY(check_table(path, h));
    mem = open_memstream(&text, &len);
    if (!mem)
        return tether__fail(TETHER_ENOMEM, "%s: out of memory formatting the hostfile", path);
    format_table(mem, h);
    if (fclose(mem) != 0) {
        free(text);
        return tether__fail(TETHER_ENOMEM, "%s: out of memory formatting the hostfile", path);
    }
    rc = tether__hf_write_file(path, text);
    free(text);
    return rc;
}
