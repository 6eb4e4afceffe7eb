/* hostfile/hf_json.c - reading JSON files with positioned errors, and the device-list cells. */
#include "hostfile/hf_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

/* Hostfiles are a few kilobytes; anything this big is the wrong file. */
#define HF_FILE_MAX (4u << 20)
/* ibverbs device names fit IBV_SYSFS_NAME_MAX (64) with the terminator. */
#define HF_DEVNAME_MAX 63

const char *tether__hf_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "a list";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
        return "true";
    case JSON_FALSE:
        return "false";
    case JSON_NULL:
        return "null";
    }
    return "an unknown JSON value";
}

static int syntax_error(const char *name, const json_error_t *err)
{
    return tether__fail(TETHER_ECONFIG, "%s: line %d, column %d: invalid JSON: %s", name, err->line,
                        err->column, err->text);
}

/* Double the buffer (one spare byte for the terminator), up to HF_FILE_MAX. */
static int grow(char **buf, size_t *cap, const char *path)
{
    size_t ncap = *cap ? *cap * 2 : 4096;
    char *nb;

    if (ncap > HF_FILE_MAX)
        return tether__fail(TETHER_ECONFIG, "%s: larger than %u bytes; is this a hostfile?", path,
                            HF_FILE_MAX);
    nb = realloc(*buf, ncap + 1);
    if (!nb)
        return tether__fail(TETHER_ENOMEM, "%s: out of memory reading the file", path);
    *buf = nb;
    *cap = ncap;
    return TETHER_OK;
}

/* Read path into a NUL-terminated buffer; *len excludes the terminator. Reads to EOF rather than
 * trusting the size, so pipes and /dev/fd paths work too. */
static int read_all(const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *b = NULL;
    size_t n = 0, cap = 0;
    int rc = TETHER_OK;

    if (!f)
        return tether__fail(TETHER_ECONFIG, "%s: cannot open the hostfile: %s", path,
                            strerror(errno));
    while (rc == TETHER_OK && !feof(f) && !ferror(f)) {
        if (n == cap)
            rc = grow(&b, &cap, path);
        if (rc == TETHER_OK)
            n += fread(b + n, 1, cap - n, f);
    }
    if (rc == TETHER_OK && ferror(f))
        rc =
            tether__fail(TETHER_ECONFIG, "%s: cannot read the hostfile: %s", path, strerror(errno));
    fclose(f);
    if (rc < 0) {
        free(b);
        return rc;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return TETHER_OK;
}

static int load_file(const char *path, json_t **out)
{
    json_error_t err;
    char *buf = NULL;
    size_t len = 0;

    TRY(read_all(path, &buf, &len));
    /* json_loadb: a NUL byte inside the file is reported, not silently cut at. */
    *out = json_loadb(buf, len, 0, &err);
    free(buf);
    return *out ? TETHER_OK : syntax_error(path, &err);
}

static int parse_text(const char *text, const char *name, json_t **out)
{
    json_error_t err;

    /* Default flags: trailing data after the value is an error, as it should be in a file. */
    *out = json_loads(text, 0, &err);
    return *out ? TETHER_OK : syntax_error(name, &err);
}

int tether__hf_read(const char *src, int is_path, const char *name, tether__hf_reader read,
                    void (*release)(void *), void *out, size_t out_size)
{
    json_t *root;
    int rc;

    if (!out || !src)
        return tether__fail(TETHER_EINVAL, "%s: NULL %s given", is_path ? "hostfile" : name,
                            out ? (is_path ? "path" : "JSON text") : "result pointer");
    memset(out, 0, out_size);
    if (is_path)
        name = src;
    TRY(is_path ? load_file(src, &root) : parse_text(src, name, &root));
    rc = read(root, name, out);
    json_decref(root);
    if (rc < 0)
        release(out);
    return rc;
}

int tether__hf_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    int failed;

    if (!f)
        return tether__fail(TETHER_ECONFIG, "%s: cannot create the hostfile: %s", path,
                            strerror(errno));
    failed = fputs(text, f) == EOF;
    /* fclose flushes: a full disk shows up here, not at fputs. */
    if (fclose(f) != 0 || failed)
        return tether__fail(TETHER_ECONFIG, "%s: cannot write the hostfile: %s", path,
                            strerror(errno));
    return TETHER_OK;
}

int tether__hf_calloc(size_t n, size_t size, const char *name, void *out)
{
    void *p = calloc(n ? n : 1, size);

    if (!p)
        return tether__fail(TETHER_ENOMEM, "%s: out of memory (%zu x %zu bytes)", name, n, size);
    memcpy(out, &p, sizeof p);
    return TETHER_OK;
}

int tether__hf_strdup(const char *s, const char *name, char **out)
{
    *out = strdup(s);
    return *out ? TETHER_OK : tether__fail(TETHER_ENOMEM, "%s: out of memory", name);
}

static int check_devname(const char *s, const char *where)
{
    size_t len = strlen(s);

    if (len == 0)
        return tether__fail(TETHER_ECONFIG, "%s: empty device name; expected e.g. \"rdma_en2\"",
                            where);
    if (len > HF_DEVNAME_MAX)
        return tether__fail(TETHER_ECONFIG,
                            "%s: device name \"%.*s...\" is longer than %d "
                            "characters",
                            where, HF_QUOTE_MAX, s, HF_DEVNAME_MAX);
    for (const char *p = s; *p; p++)
        if (*p <= ' ' || *p == 0x7f)
            return tether__fail(TETHER_ECONFIG,
                                "%s: device name \"%.*s\" contains a space or "
                                "control character",
                                where, HF_QUOTE_MAX, s);
    return TETHER_OK;
}

/* Fill list[0..n-1] from the strings in v (a string, or a list of strings). */
static int fill_devlist(const json_t *v, const char *where, char **list)
{
    char sub[HF_WHERE_MAX + 32];
    size_t i;
    const json_t *e;

    if (json_is_string(v)) {
        TRY(check_devname(json_string_value(v), where));
        return tether__hf_strdup(json_string_value(v), where, &list[0]);
    }
    json_array_foreach(v, i, e) {
        snprintf(sub, sizeof sub, "%s, entry %zu", where, i);
        if (!json_is_string(e))
            return tether__fail(TETHER_ECONFIG, "%s: expected a device name string, got %s", sub,
                                tether__hf_type_name(e));
        TRY(check_devname(json_string_value(e), sub));
        for (size_t k = 0; k < i; k++)
            if (strcmp(list[k], json_string_value(e)) == 0)
                return tether__fail(TETHER_ECONFIG, "%s: \"%s\" is listed twice", sub, list[k]);
        TRY(tether__hf_strdup(json_string_value(e), where, &list[i]));
    }
    return TETHER_OK;
}

int tether__hf_parse_devlist(const json_t *v, const char *where, char ***out)
{
    size_t n;
    char **list = NULL;
    int rc;

    *out = NULL;
    if (json_is_null(v))
        n = 0;
    else if (json_is_string(v))
        n = 1;
    else if (json_is_array(v))
        n = json_array_size(v);
    else
        return tether__fail(TETHER_ECONFIG,
                            "%s: expected null, a device name or a list of device "
                            "names, got %s",
                            where, tether__hf_type_name(v));
    TRY(tether__hf_calloc(n + 1, sizeof *list, where, &list));
    rc = n ? fill_devlist(v, where, list) : TETHER_OK;
    if (rc < 0) {
        tether__hf_devlist_free(list);
        return rc;
    }
    *out = list;
    return TETHER_OK;
}

void tether__hf_devlist_free(char **list)
{
    if (!list)
        return;
    for (char **p = list; *p; p++)
        free(*p);
    free(list);
}

size_t tether__hf_devlist_len(char *const *list)
{
    size_t n = 0;

    while (list && list[n])
        n++;
    return n;
}

static void cell_pos(char *buf, size_t len, tether__hf_table form, int i, int j)
{
    if (form == HF_RDMA_LISTS)
        snprintf(buf, len, "host %d, rdma[%d]", i, j);
    else
        snprintf(buf, len, "row %d, column %d", i, j);
}

int tether__hf_check_links(char ****rows, int n, const char *name, tether__hf_table form)
{
    const char *who = form == HF_RDMA_LISTS ? "host" : "rank";
    char a_pos[64], b_pos[64];

    for (int i = 0; i < n; i++) {
        cell_pos(a_pos, sizeof a_pos, form, i, i);
        if (tether__hf_devlist_len(rows[i][i]) != 0)
            return tether__fail(TETHER_ECONFIG,
                                "%s: %s: \"%s\" links %s %d to itself; expected "
                                "null on the diagonal",
                                name, a_pos, rows[i][i][0], who, i);
        for (int j = i + 1; j < n; j++) {
            size_t a = tether__hf_devlist_len(rows[i][j]), b = tether__hf_devlist_len(rows[j][i]);
            cell_pos(a_pos, sizeof a_pos, form, i, j);
            cell_pos(b_pos, sizeof b_pos, form, j, i);
            if (a != b)
                return tether__fail(TETHER_ECONFIG,
                                    "%s: %s names %zu device(s) but %s names %zu; "
                                    "a cable links both ends, so both must list it",
                                    name, a_pos, a, b_pos, b);
        }
    }
    return TETHER_OK;
}

int tether__hf_note(tether__hf_problems *p, int rc)
{
    if (rc >= 0)
        return rc;
    const char *msg = tether_last_error();
    size_t len = strlen(p->text), room = sizeof p->text - len;
    /* keep room for the closing "and N more" line */
    int fits = p->n == 0 || strlen(msg) + sizeof "\n  also: " + 32 < room;
    if (p->n++ == 0)
        p->code = rc;
    if (fits)
        snprintf(p->text + len, room, "%s%s", p->n > 1 ? "\n  also: " : "", msg);
    else
        p->cut++;
    tether__clear_error();
    return rc;
}

int tether__hf_problems_end(const tether__hf_problems *p)
{
    if (p->n == 0)
        return TETHER_OK;
    if (p->cut)
        return tether__fail(p->code, "%s\n  and %d more", p->text, p->cut);
    return tether__fail(p->code, "%s", p->text);
}
