/* core/reduce.h - reduction kernels and float16/bfloat16 conversions, vectorisable loops; on x86-64
 * CPUs with AVX2 and F16C, and on arm64 (NEON), faster kernels chosen at run time that give the
 * same bits. */
#ifndef TETHER_CORE_REDUCE_H
#define TETHER_CORE_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "tether.h"

/* dst[i] = dst[i] OP src[i] for n elements of dt. dst and src may not overlap unless equal.
 * Returns TETHER_EINVAL for an op the dtype does not have (MAX/MIN on complex64). */
int tether__reduce(void *dst, const void *src, size_t n, tether_dtype dt, tether_op op);

/* 1 if op is defined on dt. */
int tether__op_valid(tether_dtype dt, tether_op op);

/* Conversions, round to nearest even; NaN stays NaN. */
float tether__half_to_float(uint16_t h);
uint16_t tether__float_to_half(float f);
float tether__bf16_to_float(uint16_t b);
uint16_t tether__float_to_bf16(float f);
void tether__floats_to_bf16(uint16_t *dst, const float *src, size_t n);
void tether__bf16_to_floats(float *dst, const uint16_t *src, size_t n);
/* x[i] = the float32 value of bf16(x[i]): what a receiver of x as bfloat16 would hold */
void tether__round_to_bf16(float *x, size_t n);
/* dst[i] += bf16 src[i] (float32 accumulation), for bf16 on the wire */
void tether__reduce_bf16_into_f32(float *dst, const uint16_t *src, size_t n, tether_op op);

/* For tests and benchmarks: portable = 1 makes every function above use the portable C kernels,
 * 0 the fastest this CPU has (the default). Returns the name of the set now in use: "portable",
 * "avx2", "neon", "neon+fp16" or "neon+fp16+bf16". Safe while other threads reduce: each call runs
 * one set or the other, same results. */
const char *tether__reduce_select(int portable);

#endif
