/* launcher/rank_output.c - pass each rank's output on in whole lines, so two ranks never share a
 * line. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "launch_say.h"
#include "rank_output.h"

#define READ_CHUNK 65536
#define PREFIX_MAX 16 /* "[4095] " and then some */

/* A sink that failed (e.g. stdout piped into `head`) is dropped: the ranks keep running, as
 * their output has nowhere to go. Indexed by fd (1, 2). */
static int sink_dead[3];

/* write() all of p, waiting in poll() if the sink was left non-blocking by whoever gave it to
 * us. -1 with errno on failure. */
static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            poll(&pfd, 1, 1000);
        } else if (!(w < 0 && errno == EINTR)) {
            return -1;
        }
    }
    return 0;
}

static void sink_write(int sink, const char *p, size_t n)
{
    if (sink_dead[sink] || write_all(sink, p, n) == 0)
        return;
    sink_dead[sink] = 1;
    if (sink != 2)
        tether__launch_say("cannot write the ranks' output to fd %d: %s; dropping the rest of it",
                           sink, strerror(errno));
}

/* The stream whose unfinished line was passed on last, so the line is still open (a prompt);
 * NULL when the output ends with a newline. One for both sinks, which are mostly one terminal:
 * any other stream's output first ends that line, so two ranks never share one; the owner's next
 * bytes continue it. */
static const tether__out_stream *open_line;

/* End the open line unless s owns it. */
static void close_open_line(const tether__out_stream *s)
{
    if (open_line && open_line != s) {
        sink_write(open_line->sink, "\n", 1);
        open_line = NULL;
    }
}

/* Pass on lines[0..len): lines each ending in '\n' but maybe the last (an unfinished line, whose
 * line then stays open), each given the prefix (not a continuation of s's open line), in one write
 * so the lines leave together. */
static void emit(const tether__out_stream *s, const char *lines, size_t len)
{
    char prefix[PREFIX_MAX] = "";
    size_t plen = 0, nlines = 1, at = 0;
    close_open_line(s);
    int continuing = open_line == s;
    if (s->prefix)
        plen = (size_t)snprintf(prefix, sizeof prefix, "[%d] ", s->rank);
    for (size_t i = 0; i < len; i++)
        nlines += lines[i] == '\n';
    char *out = malloc(len + nlines * plen);
    if (!out) {
        sink_write(s->sink, lines, len); /* unprefixed beats lost */
        return;
    }
    for (const char *line = lines, *end = lines + len; line < end; continuing = 0) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t n = nl ? (size_t)(nl - line) + 1 : (size_t)(end - line);
        if (continuing || !nl || !s->filter || !s->filter(s->filter_ctx, line, n - 1)) {
            memcpy(out + at, prefix, continuing ? 0 : plen);
            at += continuing ? 0 : plen;
            memcpy(out + at, line, n);
            at += n;
        }
        line += n;
    }
    if (at) {
        sink_write(s->sink, out, at);
        open_line = out[at - 1] == '\n' ? NULL : s;
    }
    free(out);
}

/* The last newline of buf[0..len), or NULL (memrchr is a GNU extension). */
static char *last_newline(char *buf, size_t len)
{
    while (len > 0)
        if (buf[--len] == '\n')
            return buf + len;
    return NULL;
}

/* Emit every complete line in the buffer. A line that reached TETHER__LINE_MAX without a newline
 * is cut there (and given one), so memory stays bounded. final: flush the rest as a line too. */
static void emit_lines(tether__out_stream *s, int final)
{
    char *last_nl = last_newline(s->buf, s->len);
    size_t whole = last_nl ? (size_t)(last_nl - s->buf) + 1 : 0;
    if (whole)
        emit(s, s->buf, whole);
    memmove(s->buf, s->buf + whole, s->len - whole);
    s->len -= whole;
    if (s->len > 0 && (final || s->len >= TETHER__LINE_MAX)) {
        s->buf[s->len++] = '\n'; /* there is room: cap > len always (see grow) */
        emit(s, s->buf, s->len);
        s->len = 0;
    } else if (final && open_line == s) {
        sink_write(s->sink, "\n", 1); /* the stream ends: so does its open line */
        open_line = NULL;
    }
}

long long tether__out_due_ms(const tether__out_stream *s)
{
    return s->fd >= 0 && s->len > 0 ? s->last_read_ms + TETHER__PARTIAL_QUIET_MS : -1;
}

void tether__out_tick(tether__out_stream *s, long long now_ms)
{
    long long due = tether__out_due_ms(s);
    if (due < 0 || now_ms < due)
        return;
    /* The start of a line the filter must see whole waits for its newline. */
    if (open_line != s && s->keep_whole &&
        strncmp(s->buf, s->keep_whole,
                s->len < strlen(s->keep_whole) ? s->len : strlen(s->keep_whole)) == 0) {
        s->last_read_ms = now_ms; /* look again later, not in a loop */
        return;
    }
    emit(s, s->buf, s->len);
    s->len = 0;
}

/* Make room for one more read (and the newline emit_lines may add). */
static int grow(tether__out_stream *s)
{
    if (s->cap - s->len > READ_CHUNK)
        return 0;
    size_t cap = s->len + READ_CHUNK + 1;
    char *buf = realloc(s->buf, cap);
    if (!buf)
        return -1;
    s->buf = buf;
    s->cap = cap;
    return 0;
}

void tether__out_init(tether__out_stream *s, int fd, int sink, int rank, int prefix)
{
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->sink = sink;
    s->rank = rank;
    s->prefix = prefix;
}

void tether__out_close(tether__out_stream *s)
{
    if (s->fd >= 0) {
        emit_lines(s, 1);
        close(s->fd);
        s->fd = -1;
    }
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
}

int tether__out_pump(tether__out_stream *s, int all)
{
    while (s->fd >= 0) {
        if (grow(s) != 0) {
            tether__launch_say("rank %d: out of memory buffering its output", s->rank);
            tether__out_close(s);
            break;
        }
        /* Leave one byte for the newline emit_lines may add. */
        ssize_t r = read(s->fd, s->buf + s->len, s->cap - s->len - 1);
        if (r > 0) {
            s->len += (size_t)r;
            s->last_read_ms = tether__now_ms();
            emit_lines(s, 0);
            if (!all)
                return 1;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 1;
        } else {
            if (r < 0)
                tether__launch_say("rank %d: reading its output: %s", s->rank, strerror(errno));
            tether__out_close(s);
        }
    }
    return 0;
}
