/* launcher/stdin_bcast.c - copy the launcher's stdin to every rank's stdin, at the pace of the
 * slowest reader: a chunk is read only once every rank has taken the last one. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch_say.h"
#include "stdin_bcast.h"

int tether__bcast_init(tether__bcast *b, int src, int n)
{
    b->src = src;
    b->n = n;
    b->len = 0;
    b->fds = malloc((size_t)n * sizeof *b->fds);
    b->off = calloc((size_t)n, sizeof *b->off);
    if (!b->fds || !b->off) {
        tether__launch_say("out of memory setting up stdin for %d ranks", n);
        tether__bcast_free(b);
        return -1;
    }
    for (int i = 0; i < n; i++)
        b->fds[i] = -1;
    return 0;
}

void tether__bcast_free(tether__bcast *b)
{
    for (int i = 0; b->fds && i < b->n; i++)
        tether__bcast_close(b, i);
    free(b->fds);
    free(b->off);
    b->fds = NULL;
    b->off = NULL;
}

void tether__bcast_close(tether__bcast *b, int i)
{
    if (b->fds[i] >= 0)
        close(b->fds[i]);
    b->fds[i] = -1;
}

int tether__bcast_wants_write(const tether__bcast *b, int i)
{
    return b->fds[i] >= 0 && b->off[i] < b->len;
}

int tether__bcast_wants_read(const tether__bcast *b)
{
    if (b->src < 0)
        return 0;
    for (int i = 0; i < b->n; i++)
        if (tether__bcast_wants_write(b, i))
            return 0;
    return 1;
}

/* The next chunk. EOF (or an error such as EIO from a terminal we may not read) ends stdin for
 * every rank; no rank has bytes left to take here, so closing loses nothing. */
void tether__bcast_read(tether__bcast *b)
{
    ssize_t r = read(b->src, b->buf, sizeof b->buf);
    if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    if (r <= 0) {
        b->src = -1;
        b->len = 0;
        for (int i = 0; i < b->n; i++)
            tether__bcast_close(b, i);
        return;
    }
    b->len = (size_t)r;
    memset(b->off, 0, (size_t)b->n * sizeof *b->off);
}

/* Give rank i what it can take now. A rank that closed its stdin (EPIPE) simply stops getting it.
 */
void tether__bcast_write(tether__bcast *b, int i)
{
    ssize_t w = write(b->fds[i], b->buf + b->off[i], b->len - b->off[i]);
    if (w > 0)
        b->off[i] += (size_t)w;
    else if (w < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
        tether__bcast_close(b, i);
}
