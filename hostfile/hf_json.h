/* hostfile/hf_json.h - helpers shared by the hostfile parsers (private to hostfile/). */
#ifndef TETHER_HOSTFILE_HF_JSON_H
#define TETHER_HOSTFILE_HF_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "core/errors.h"

/* Longest text quoted back in a message, so one bad value cannot fill the error buffer. */
#define HF_QUOTE_MAX 80
/* Room for a position prefix: "hosts.json: host 2, rdma[3]". */
#define HF_WHERE_MAX 512

/* "a list", "an object", "a string", ... for "expected X, got Y" messages. */
const char *tether__hf_type_name(const json_t *v);

/* Turns a parsed root into a result; name is the file (or text) name for messages. */
typedef int (*tether__hf_reader)(const json_t *root, const char *name, void *out);

/* The one path every hostfile parser takes: clear out (out_size bytes), parse src (a JSON text,
 * or with is_path the file it names), run read, and on failure release(out) so the caller never
 * holds half a result. A syntax error names name (or the path), line and column. */
int tether__hf_read(const char *src, int is_path, const char *name, tether__hf_reader read,
                    void (*release)(void *), void *out, size_t out_size);

/* A file's problems so far, so that a check names every bad entry, not only the first: a parser
 * notes each entry's failure and goes on with the next entry, and fails once at the end. */
typedef struct tether__hf_problems {
    int n;    /* problems noted */
    int code; /* the first one's status */
    int cut;  /* problems that did not fit in text */
    char text[TETHER__ERRMSG_MAX];
} tether__hf_problems;

/* rc < 0: take the message of the failure rc reports into p, clear it for the next. Returns rc. */
int tether__hf_note(tether__hf_problems *p, int rc);

/* TETHER_OK when p holds no problem, else fail with all of them: the first on the first line (as
 * when it was the only one), then "  also: ..." one per line, "  and N more" if they overflow. */
int tether__hf_problems_end(const tether__hf_problems *p);

/* Write text to path (created or truncated); errors name the path and the errno text. */
int tether__hf_write_file(const char *path, const char *text);

/* Checked allocation: TETHER_ENOMEM naming what was being read on failure. */
int tether__hf_calloc(size_t n, size_t size, const char *name, void *out);
int tether__hf_strdup(const char *s, const char *name, char **out);

/* Check a host without a port: IPv4 dotted quad, host name, or (allow_v6) a bare IPv6 address.
 * where is the message prefix, e.g. "hosts.json: rank 2, address 0". */
int tether__hf_check_host(const char *host, int allow_v6, const char *where);

/* One link between two hosts: null, "dev" or ["dev", ...] into a NULL-terminated list of names
 * (an empty list means no link). Errors name where. */
int tether__hf_parse_devlist(const json_t *v, const char *where, char ***out);
void tether__hf_devlist_free(char **list);
size_t tether__hf_devlist_len(char *const *list);

/* How a link table is written, for positions in messages. */
typedef enum {
    HF_DEVICE_MATRIX, /* "row i, column j"; its rows are ranks */
    HF_RDMA_LISTS     /* "host i, rdma[j]": the launcher file's per-host lists */
} tether__hf_table;

/* Check an n x n link table (rows[i][j] a device list): the diagonal is empty, and [i][j] has as
 * many cables as [j][i] since a cable links both ends. */
int tether__hf_check_links(char ****rows, int n, const char *name, tether__hf_table form);

#endif
