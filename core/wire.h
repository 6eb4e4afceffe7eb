/* core/wire.h - little-endian integers on the wire, so mixed machines agree: the transports' frames
 * and handshakes, and the wait-state records their heartbeats carry (core/waitstate.c). */
#ifndef TETHER_CORE_WIRE_H
#define TETHER_CORE_WIRE_H

#include <stdint.h>

static inline void tether__put_u16(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline uint32_t tether__get_u16(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static inline void tether__put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t tether__get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void tether__put_u64(unsigned char *p, uint64_t v)
{
    tether__put_u32(p, (uint32_t)v);
    tether__put_u32(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t tether__get_u64(const unsigned char *p)
{
    return (uint64_t)tether__get_u32(p) | (uint64_t)tether__get_u32(p + 4) << 32;
}

#endif
