/* core/tag.h - what every message carries to be matched with its receive: the group, the call's
 * number, the message's step within it and the call's signature (core/transport.h says how the
 * transports match them). */
#ifndef TETHER_CORE_TAG_H
#define TETHER_CORE_TAG_H

#include <stdint.h>

#define TETHER__TAG_P2P 0x80000000u  /* seq bit: point-to-point message, seq counts per pair */
#define TETHER__TAG_CTRL 0x40000000u /* seq bit: core's own control traffic (split) */
/* A group's collective calls are numbered within the bits below those two (core/coll.c): a job
 * that ran 2^30 collectives on a group would otherwise tag its next calls as control traffic, and
 * from 2^31 on as point-to-point messages, which the transports match by other rules. */
#define TETHER__TAG_SEQ_MASK 0x3fffffffu

/* Step bit of a collective's message whose receiver only copies it into place (a broadcast's, the
 * direct all-gather's blocks): no reduction reads it next, so a transport may move it in one copy
 * from the sender's memory from a smaller size than a message a reduction reads, which two copies
 * through a shared ring leave in the cache (backends/tcp/engine_impl.h). Sender and receiver mark
 * a message alike; a point-to-point message never counts as marked (its step is the user's tag). */
#define TETHER__STEP_COPY 0x80000000u

/* a - b for two collective numbers, in the wrap of TETHER__TAG_SEQ_MASK: > 0 when a comes after b
 * (by less than 2^29 calls). */
static inline int32_t tether__tag_seq_diff(uint32_t a, uint32_t b)
{
    return (int32_t)((a - b) << 2) / 4;
}

typedef struct tether__tag {
    uint32_t
        group;    /* group id: the world is 0; a child mixes its parent's id, split number, color */
    uint32_t seq; /* collective number within the group, or a per-pair number | TETHER__TAG_P2P */
    uint32_t step; /* message number within the collective */
    uint32_t sig;  /* signature of the call (kind, count, dtype, op, root, algorithm) */
} tether__tag;

/* Whether t is a collective message marked TETHER__STEP_COPY. */
static inline int tether__tag_copy_only(tether__tag t)
{
    return !(t.seq & TETHER__TAG_P2P) && (t.step & TETHER__STEP_COPY);
}

#endif
