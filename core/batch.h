/* core/batch.h - the messages of a collective's step posted together (core/batch.c): one turn of
 * the transport's lock for all of them, through its post() (core/transport.h), instead of one per
 * message, and no test for those that finished while posted. */
#ifndef TETHER_CORE_BATCH_H
#define TETHER_CORE_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "group.h"

/* Messages a batch holds before it posts them itself. */
#define TETHER__BATCH_MAX 16

typedef struct tether__batch {
    tether_group *g;
    int n;
    tether__post post[TETHER__BATCH_MAX];
    tether__req **slot[TETHER__BATCH_MAX];
} tether__batch;

void tether__batch_init(tether__batch *b, tether_group *g);
/* Queue a send to / a receive from group rank peer in g's current call at step: *slot gets its
 * request once posted, NULL if it finished at once (tether__waitall skips it). A full batch is
 * posted first. Errors are sticky on the world and already recorded. */
int tether__batch_send(tether__batch *b, int peer, const void *buf, size_t bytes, uint32_t step,
                       tether__req **slot);
int tether__batch_recv(tether__batch *b, int peer, void *buf, size_t bytes, uint32_t step,
                       tether__req **slot);
/* Post what the batch holds, in the order queued. */
int tether__batch_post(tether__batch *b);

#endif
