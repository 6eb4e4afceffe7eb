/* bench/values.c - element i of a buffer of any dtype as a double and back, for checking results
 * (tether bench --check, and the collective test suite). */
#include <complex.h>
#include <stdint.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "core/reduce.h"

void bench_store(tether_dtype dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case TETHER_BOOL:
        ((uint8_t *)buf)[i] = v != 0;
        break;
    case TETHER_INT8:
        ((int8_t *)buf)[i] = (int8_t)v;
        break;
    case TETHER_UINT8:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    case TETHER_INT16:
        ((int16_t *)buf)[i] = (int16_t)v;
        break;
    case TETHER_UINT16:
        ((uint16_t *)buf)[i] = (uint16_t)v;
        break;
    case TETHER_INT32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    case TETHER_UINT32:
        ((uint32_t *)buf)[i] = (uint32_t)v;
        break;
    case TETHER_INT64:
        ((int64_t *)buf)[i] = (int64_t)v;
        break;
    case TETHER_UINT64:
        ((uint64_t *)buf)[i] = (uint64_t)v;
        break;
    case TETHER_FLOAT16:
        ((uint16_t *)buf)[i] = tether__float_to_half((float)v);
        break;
    case TETHER_BFLOAT16:
        ((uint16_t *)buf)[i] = tether__float_to_bf16((float)v);
        break;
    case TETHER_FLOAT32:
        ((float *)buf)[i] = (float)v;
        break;
    case TETHER_FLOAT64:
        ((double *)buf)[i] = v;
        break;
    case TETHER_COMPLEX64:
        ((float complex *)buf)[i] = (float)v + 1.0f * I;
        break;
    case TETHER_DTYPE_COUNT:
        abort();
    }
}

double bench_load(tether_dtype dt, const void *buf, size_t i, double *imag)
{
    *imag = 0;
    switch (dt) {
    case TETHER_BOOL:
        return ((const uint8_t *)buf)[i];
    case TETHER_INT8:
        return ((const int8_t *)buf)[i];
    case TETHER_UINT8:
        return ((const uint8_t *)buf)[i];
    case TETHER_INT16:
        return ((const int16_t *)buf)[i];
    case TETHER_UINT16:
        return ((const uint16_t *)buf)[i];
    case TETHER_INT32:
        return ((const int32_t *)buf)[i];
    case TETHER_UINT32:
        return ((const uint32_t *)buf)[i];
    case TETHER_INT64:
        return (double)((const int64_t *)buf)[i];
    case TETHER_UINT64:
        return (double)((const uint64_t *)buf)[i];
    case TETHER_FLOAT16:
        return tether__half_to_float(((const uint16_t *)buf)[i]);
    case TETHER_BFLOAT16:
        return tether__bf16_to_float(((const uint16_t *)buf)[i]);
    case TETHER_FLOAT32:
        return ((const float *)buf)[i];
    case TETHER_FLOAT64:
        return ((const double *)buf)[i];
    case TETHER_COMPLEX64: {
        float complex z = ((const float complex *)buf)[i];
        *imag = cimagf(z);
        return crealf(z);
    }
    case TETHER_DTYPE_COUNT:
        break;
    }
    abort();
}
