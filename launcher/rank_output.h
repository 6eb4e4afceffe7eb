/* launcher/rank_output.h - each rank's output passed on in whole lines (rank_output.c). */
#ifndef TETHER_LAUNCHER_RANK_OUTPUT_H
#define TETHER_LAUNCHER_RANK_OUTPUT_H

#include <stddef.h>

#define TETHER__LINE_MAX (1u << 20) /* a longer line is cut into pieces of this size */

/* A look at each line before it goes out (without its newline); 1 swallows it. */
typedef int (*tether__line_filter)(void *ctx, const char *line, size_t len);

typedef struct tether__out_stream {
    int fd;   /* read end of the rank's pipe; -1 after EOF */
    int sink; /* 1 or 2: where whole lines go */
    int rank;
    int prefix;                 /* add "[rank] " */
    tether__line_filter filter; /* NULL: every line goes out; it sees whole lines only */
    void *filter_ctx;
    const char *keep_whole; /* unfinished lines starting with this wait for their newline */
    char *buf;              /* bytes of an unfinished line */
    size_t len, cap;
    long long last_read_ms; /* when bytes last came (monotonic) */
} tether__out_stream;

/* An unfinished line (a prompt) is passed on once its rank has written nothing more for this
 * long; lines of other ranks then start on a fresh line, so no two ranks share one. */
#define TETHER__PARTIAL_QUIET_MS 100

void tether__out_init(tether__out_stream *s, int fd, int sink, int rank, int prefix);
/* Read what the pipe has now (non-blocking) and pass whole lines on (an unfinished one waits for
 * tether__out_tick). Returns 1 while open, 0 after EOF (the partial last line is then flushed
 * with a newline and fd closed). all: keep
 * reading until the pipe is empty, else one read. */
int tether__out_pump(tether__out_stream *s, int all);
/* Flush the partial line and close the pipe, without waiting for EOF. */
void tether__out_close(tether__out_stream *s);
/* When s's unfinished line is due to be passed on (monotonic ms), or -1 when it has none. */
long long tether__out_due_ms(const tether__out_stream *s);
/* Pass s's unfinished line on if it is due at now_ms (see TETHER__PARTIAL_QUIET_MS). */
void tether__out_tick(tether__out_stream *s, long long now_ms);

#endif
