/* launcher/stdin_bcast.h - the launcher's stdin copied to every rank's stdin (stdin_bcast.c). */
#ifndef TETHER_LAUNCHER_STDIN_BCAST_H
#define TETHER_LAUNCHER_STDIN_BCAST_H

#include <stddef.h>

typedef struct tether__bcast {
    int src; /* the launcher's stdin; -1 after EOF or error */
    int n;
    int *fds;    /* write end of each rank's stdin pipe; -1 once closed */
    size_t *off; /* how much of buf each rank has taken */
    size_t len;  /* bytes in buf */
    char buf[1 << 16];
} tether__bcast;

int tether__bcast_init(tether__bcast *b, int src, int n);
void tether__bcast_free(tether__bcast *b);
/* 1 when every open rank has the current chunk, so the next one may be read. */
int tether__bcast_wants_read(const tether__bcast *b);
/* 1 when rank i still has bytes of the current chunk to take. */
int tether__bcast_wants_write(const tether__bcast *b, int i);
void tether__bcast_read(tether__bcast *b);
void tether__bcast_write(tether__bcast *b, int i);
void tether__bcast_close(tether__bcast *b, int i);

#endif
