/* tests/unit/test_reduce.c - every reduction kernel and half-precision conversion against a slow
 * scalar reference written independently (double arithmetic, search over every half value), under
 * every kernel set; and the fast kernel set (x86-64 AVX2/F16C, when the CPU has it) against the
 * portable one bit for bit, on every float16 and bfloat16 value, with tails and unaligned pointers.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include "core/reduce.h"
#include "tether.h"

/* ---- deterministic random numbers ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static float f32_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t bits32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ---- reference conversions ---- */

/* The exact value of a float16 bit pattern, from its definition. */
static double ref_half_value(uint16_t h)
{
    int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exp == 0x1f)
        return mant ? NAN : sign * INFINITY;
    if (exp == 0)
        return sign * ldexp(mant, -24);
    return sign * ldexp(1024 + mant, exp - 25);
}

/* Nearest float16 to x (round half to even) by search over the 0x7c00 finite magnitudes; beyond the
 * largest, values from 65520 on (half an ulp above 65504) are infinity. */
static uint16_t ref_float_to_half(float f)
{
    if (isnan(f))
        return 0x7e00;
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    double x = fabs((double)f);
    if (x >= 65520.0)
        return sign | 0x7c00;
    unsigned lo = 0, hi = 0x7bff; /* largest pattern with value <= x */
    while (lo < hi) {
        unsigned mid = (lo + hi + 1) / 2;
        if (ref_half_value((uint16_t)mid) <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo == 0x7bff)
        return sign | 0x7bff;
    double below = ref_half_value((uint16_t)lo), above = ref_half_value((uint16_t)(lo + 1));
    unsigned pick = (x - below < above - x)   ? lo
                    : (x - below > above - x) ? lo + 1
                                              : (lo % 2 ? lo + 1 : lo);
    return (uint16_t)(sign | pick);
}

/* bfloat16 is the top half of a float32: round the dropped 16 bits by comparing distances. */
static double ref_bf16_value(uint16_t b)
{
    if ((b & 0x7fff) == 0x7f80)
        return (b & 0x8000) ? -ldexp(1, 128) : ldexp(1, 128); /* where rounding up lands */
    return (double)f32_of((uint32_t)b << 16);
}

static uint16_t ref_float_to_bf16(float f)
{
    if (isnan(f))
        return (uint16_t)((bits32(f) >> 16) | 0x40);
    if (isinf(f))
        return (uint16_t)(bits32(f) >> 16);
    uint16_t lo = (uint16_t)(bits32(f) >> 16), hi = (uint16_t)(lo + 1); /* truncation, one up */
    double x = (double)f, dl = fabs(x - ref_bf16_value(lo)), dh = fabs(ref_bf16_value(hi) - x);
    if (dl < dh || (dl == dh && lo % 2 == 0))
        return lo;
    return hi;
}

static int same_float(double a, double b)
{
    return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

/* ---- reference reductions: one element at a time, in double or 64-bit integers ---- */

static int is_float_dtype(tether_dtype dt)
{
    return dt == TETHER_FLOAT16 || dt == TETHER_BFLOAT16 || dt == TETHER_FLOAT32 ||
           dt == TETHER_FLOAT64;
}

static double fop(double a, double b, tether_op op)
{
    switch (op) {
    case TETHER_SUM:
        return a + b;
    case TETHER_PROD:
        return a * b;
    case TETHER_MAX: /* of -0 and +0, +0 in either order */
        return (isnan(a) || isnan(b)) ? NAN : (a > b || (a == b && !signbit(a)) ? a : b);
    case TETHER_MIN: /* of -0 and +0, -0 in either order */
        return (isnan(a) || isnan(b)) ? NAN : (a < b || (a == b && signbit(a)) ? a : b);
    default:
        return NAN;
    }
}

static uint64_t iop(uint64_t a, uint64_t b, int is_signed, int bits, tether_op op)
{
    uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
    int64_t sa = (int64_t)(a << (64 - bits)) >> (64 - bits),
            sb = (int64_t)(b << (64 - bits)) >> (64 - bits);
    int a_gt = is_signed ? sa > sb : (a & mask) > (b & mask);
    switch (op) {
    case TETHER_SUM:
        return (a + b) & mask;
    case TETHER_PROD:
        return (a * b) & mask;
    case TETHER_MAX:
        return (a_gt ? a : b) & mask;
    case TETHER_MIN:
        return (a_gt ? b : a) & mask;
    default:
        return 0;
    }
}

/* Element i of buf as a double (floats) or raw integer bits, and back. */
static double load_f(const void *buf, size_t i, tether_dtype dt)
{
    const uint8_t *p = (const uint8_t *)buf + i * tether_dtype_size(dt);
    uint16_t h;
    float f;
    double d;
    switch (dt) {
    case TETHER_FLOAT16:
        memcpy(&h, p, 2);
        return ref_half_value(h);
    case TETHER_BFLOAT16:
        memcpy(&h, p, 2);
        return (double)f32_of((uint32_t)h << 16);
    case TETHER_FLOAT32:
        memcpy(&f, p, 4);
        return f;
    default:
        memcpy(&d, p, 8);
        return d;
    }
}

static uint64_t load_i(const void *buf, size_t i, size_t esize)
{
    uint64_t v = 0;
    memcpy(&v, (const uint8_t *)buf + i * esize, esize); /* little-endian test host */
    return v;
}

/* The reference result for one element of dt. */
static void ref_element(void *out, const void *dst, const void *src, size_t i, tether_dtype dt,
                        tether_op op)
{
    size_t es = tether_dtype_size(dt);
    uint8_t *o = (uint8_t *)out + i * es;
    if (dt == TETHER_BOOL) {
        int a = ((const uint8_t *)dst)[i] != 0, b = ((const uint8_t *)src)[i] != 0;
        *o = (uint8_t)((op == TETHER_SUM || op == TETHER_MAX) ? (a || b) : (a && b));
    } else if (dt == TETHER_COMPLEX64) {
        const float *a = (const float *)dst + 2 * i, *b = (const float *)src + 2 * i;
        float r[2] = {
            op == TETHER_SUM ? a[0] + b[0] : (float)((double)a[0] * b[0] - (double)a[1] * b[1]),
            op == TETHER_SUM ? a[1] + b[1] : (float)((double)a[0] * b[1] + (double)a[1] * b[0])};
        memcpy(o, r, 8);
    } else if (is_float_dtype(dt)) {
        /* one IEEE operation in double rounded to float is the correctly rounded float result */
        float r32 = (float)fop(load_f(dst, i, dt), load_f(src, i, dt), op);
        double r = fop(load_f(dst, i, dt), load_f(src, i, dt), op);
        uint16_t h;
        switch (dt) {
        case TETHER_FLOAT16:
            h = ref_float_to_half(r32);
            memcpy(o, &h, 2);
            break;
        case TETHER_BFLOAT16:
            h = ref_float_to_bf16(r32);
            memcpy(o, &h, 2);
            break;
        case TETHER_FLOAT32:
            memcpy(o, &r32, 4);
            break;
        default:
            memcpy(o, &r, 8);
            break;
        }
    } else {
        int is_signed =
            dt == TETHER_INT8 || dt == TETHER_INT16 || dt == TETHER_INT32 || dt == TETHER_INT64;
        uint64_t r = iop(load_i(dst, i, es), load_i(src, i, es), is_signed, (int)es * 8, op);
        memcpy(o, &r, es);
    }
}

static int element_equal(const void *x, const void *y, size_t i, tether_dtype dt)
{
    size_t es = tether_dtype_size(dt);
    if (is_float_dtype(dt))
        return same_float(load_f(x, i, dt), load_f(y, i, dt));
    return memcmp((const uint8_t *)x + i * es, (const uint8_t *)y + i * es, es) == 0;
}

/* Random inputs that reach every case: raw random bits (NaN, infinities and subnormals included for
 * the half types) mixed with small integers (exact sums and ties), specials at fixed places. */
static void fill(void *buf, size_t n, tether_dtype dt)
{
    size_t es = tether_dtype_size(dt);
    uint8_t *p = buf;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        if (dt == TETHER_COMPLEX64) {
            float v[2] = {(float)((int)(r % 61) - 30), (float)((int)((r >> 8) % 61) - 30)};
            memcpy(p + i * es, v, 8);
        } else if (dt == TETHER_FLOAT32 && (r & 3) == 0) {
            float v = (float)((int)((r >> 8) % 200) - 100) * 0.25f;
            memcpy(p + i * es, &v, 4);
        } else if (dt == TETHER_FLOAT64 && (r & 3) == 0) {
            double v = (double)((int)((r >> 8) % 200) - 100) * 0.25;
            memcpy(p + i * es, &v, 8);
        } else if (dt == TETHER_BOOL) {
            static const uint8_t truth[4] = {0, 1, 2, 255};
            p[i] = truth[r & 3];
        } else {
            memcpy(p + i * es, &r, es);
        }
    }
    if (dt == TETHER_FLOAT32 && n >= 4) {
        float specials[4] = {NAN, INFINITY, -0.0f, 1e-40f};
        memcpy(p, specials, sizeof specials);
    }
}

static void check_kernel(tether_dtype dt, tether_op op, size_t n, int in_place)
{
    size_t es = tether_dtype_size(dt), bytes = n * es + 1;
    uint8_t *dst = malloc(bytes), *src = malloc(bytes), *want = malloc(bytes);
    assert_non_null(dst);
    assert_non_null(src);
    assert_non_null(want);
    fill(dst, n, dt);
    fill(src, n, dt);
    if (in_place)
        memcpy(src, dst, n * es);
    for (size_t i = 0; i < n; i++)
        ref_element(want, dst, src, i, dt, op);
    assert_int_equal(tether__reduce(dst, in_place ? dst : src, n, dt, op), TETHER_OK);
    for (size_t i = 0; i < n; i++)
        if (!element_equal(dst, want, i, dt))
            fail_msg("dtype %d op %d n %zu%s: element %zu differs from the reference", (int)dt,
                     (int)op, n, in_place ? " in place" : "", i);
    free(dst);
    free(src);
    free(want);
}

static void test_every_kernel(void **state)
{
    (void)state;
    static const size_t lengths[] = {0, 1, 3, 17, 31, 1000, 4099};
    for (int portable = 0; portable < 2; portable++) {
        tether__reduce_select(portable);
        for (int dt = 0; dt < TETHER_DTYPE_COUNT; dt++)
            for (int op = 0; op < TETHER_OP_COUNT; op++) {
                if (!tether__op_valid((tether_dtype)dt, (tether_op)op))
                    continue;
                for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++)
                    check_kernel((tether_dtype)dt, (tether_op)op, lengths[l], 0);
                check_kernel((tether_dtype)dt, (tether_op)op, 257, 1);
            }
    }
    tether__reduce_select(0);
}

static void test_invalid_ops(void **state)
{
    (void)state;
    float x[4] = {1, 2, 3, 4}, y[4] = {1, 2, 3, 4};
    assert_int_equal(tether__reduce(x, y, 2, TETHER_COMPLEX64, TETHER_MAX), TETHER_EINVAL);
    assert_true(strstr(tether_last_error(), "complex64") != NULL);
    assert_int_equal(tether__reduce(x, y, 2, TETHER_COMPLEX64, TETHER_MIN), TETHER_EINVAL);
    assert_int_equal(tether__reduce(x, y, 2, TETHER_FLOAT32, TETHER_OP_COUNT), TETHER_EINVAL);
    assert_int_equal(tether__reduce(x, y, 2, TETHER_FLOAT32, (tether_op)-1), TETHER_EINVAL);
    assert_int_equal(tether__reduce(x, y, 2, TETHER_DTYPE_COUNT, TETHER_SUM), TETHER_EINVAL);
    assert_int_equal(tether__reduce(x, y, 2, (tether_dtype)-1, TETHER_SUM), TETHER_EINVAL);
    assert_true(x[0] == 1 && x[3] == 4); /* untouched */
    assert_false(tether__op_valid(TETHER_COMPLEX64, TETHER_MAX));
    assert_true(tether__op_valid(TETHER_COMPLEX64, TETHER_PROD));
    assert_true(tether__op_valid(TETHER_BOOL, TETHER_MIN));
}

/* Names for messages and bindings: one per code, distinct, NULL outside the enums. */
static void test_names(void **state)
{
    (void)state;
    for (int a = 0; a < TETHER_DTYPE_COUNT; a++) {
        assert_non_null(tether_dtype_name(a));
        for (int b = 0; b < a; b++)
            assert_string_not_equal(tether_dtype_name(a), tether_dtype_name(b));
    }
    assert_string_equal(tether_dtype_name(TETHER_FLOAT32), "float32");
    assert_string_equal(tether_dtype_name(TETHER_BFLOAT16), "bfloat16");
    assert_null(tether_dtype_name(TETHER_DTYPE_COUNT));
    assert_null(tether_dtype_name(-1));
    assert_string_equal(tether_op_name(TETHER_SUM), "sum");
    assert_string_equal(tether_op_name(TETHER_MIN), "min");
    assert_null(tether_op_name(TETHER_OP_COUNT));
    assert_null(tether_op_name(-1));
}

static void test_bool_semantics(void **state)
{
    (void)state;
    uint8_t a[4] = {0, 0, 7, 2}, b[4] = {0, 9, 0, 1}, c[4];
    memcpy(c, a, 4);
    tether__reduce(c, b, 4, TETHER_BOOL, TETHER_SUM);
    assert_memory_equal(c, ((uint8_t[]){0, 1, 1, 1}), 4);
    memcpy(c, a, 4);
    tether__reduce(c, b, 4, TETHER_BOOL, TETHER_PROD);
    assert_memory_equal(c, ((uint8_t[]){0, 0, 0, 1}), 4); /* 2 AND 1 is true, not 2 & 1 */
}

static void test_half_to_float_exhaustive(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 0x10000; h++)
        if (!same_float(tether__half_to_float((uint16_t)h), ref_half_value((uint16_t)h)))
            fail_msg("half 0x%04x -> %.9g, want %.9g", h, tether__half_to_float((uint16_t)h),
                     ref_half_value((uint16_t)h));
}

/* A float's float16: the exact pattern for non-NaN, a NaN of the same sign for NaN. */
static void expect_half(float f)
{
    uint16_t got = tether__float_to_half(f), want = ref_float_to_half(f);
    if (isnan(f)) {
        if (!isnan(ref_half_value(got)) || (got & 0x8000) != (signbit(f) ? 0x8000 : 0))
            fail_msg("NaN 0x%08x -> 0x%04x is not a NaN of the same sign", bits32(f), got);
        return;
    }
    if (got != want)
        fail_msg("float %.9g (0x%08x) -> half 0x%04x, want 0x%04x", f, bits32(f), got, want);
}

static void test_float_to_half(void **state)
{
    (void)state;
    /* every half value, the tie halfway to the next one (round to even), and one float ulp each
     * side of the tie: normal, subnormal and the overflow boundary */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        float v = (float)ref_half_value((uint16_t)h);
        float tie = (float)((ref_half_value((uint16_t)h) + ref_half_value((uint16_t)(h + 1))) / 2);
        if (h == 0x7bff)
            tie = 65520.0f;
        for (int s = 0; s < 2; s++) {
            float sg = s ? -1.0f : 1.0f;
            expect_half(sg * v);
            expect_half(sg * tie);
            expect_half(sg * nextafterf(tie, 0));
            expect_half(sg * nextafterf(tie, INFINITY));
        }
    }
    static const float specials[] = {0.0f,          -0.0f,         INFINITY,      -INFINITY,
                                     NAN,           -NAN,          1e-30f,        -1e-30f,
                                     5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f, 65504.0f,
                                     65519.99f,     65520.0f,      1e10f,         3.4e38f};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++)
        expect_half(specials[i]);
    expect_half(f32_of(0x7f800001u)); /* signalling NaN with payload only in the low bits */
    for (int i = 0; i < 200000; i++)
        expect_half(f32_of((uint32_t)rnd()));
}

static void test_float_to_bf16(void **state)
{
    (void)state;
    static const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,
                                        0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7f7fffffu,
                                        0x7f7f8000u, 0x7f7f7fffu, 0x00008000u, 0x00018000u,
                                        0x3f808000u, 0x3f818000u, 0x00000001u};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
        float f = f32_of(specials[i]);
        uint16_t got = tether__float_to_bf16(f);
        if (isnan(f))
            assert_true(isnan(tether__bf16_to_float(got)));
        else
            assert_int_equal(got, ref_float_to_bf16(f));
    }
    for (int i = 0; i < 500000; i++) {
        float f = f32_of((uint32_t)rnd());
        uint16_t got = tether__float_to_bf16(f);
        if (isnan(f))
            assert_true(isnan(tether__bf16_to_float(got)) &&
                        signbit(tether__bf16_to_float(got)) == signbit(f));
        else if (got != ref_float_to_bf16(f))
            fail_msg("float 0x%08x -> bf16 0x%04x, want 0x%04x", bits32(f), got,
                     ref_float_to_bf16(f));
    }
    for (uint32_t b = 0; b < 0x10000; b++) /* bf16 -> float is exact: top half of the bits */
        assert_int_equal(bits32(tether__bf16_to_float((uint16_t)b)), b << 16);
}

static void check_bf16_wire_helpers(void)
{
    enum { N = 1001 };
    float src[N], acc[N], want[N], rounded[N];
    uint16_t wire[N], back_bits[N];
    float back[N];
    for (int i = 0; i < N; i++)
        src[i] = f32_of((uint32_t)rnd() & 0xbfffffffu); /* finite-ish magnitudes */
    tether__floats_to_bf16(wire, src, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(wire[i], tether__float_to_bf16(src[i]));
    tether__bf16_to_floats(back, wire, N);
    for (int i = 0; i < N; i++)
        assert_int_equal(bits32(back[i]), (uint32_t)wire[i] << 16);
    memcpy(rounded, src, sizeof src);
    tether__round_to_bf16(rounded, N);
    tether__floats_to_bf16(back_bits, rounded, N); /* rounding again changes nothing */
    assert_memory_equal(back_bits, wire, sizeof wire);
    for (int op = 0; op < TETHER_OP_COUNT; op++) {
        for (int i = 0; i < N; i++) {
            acc[i] = (float)((int)(rnd() % 41) - 20);
            want[i] = (float)fop(acc[i], tether__bf16_to_float(wire[i]), (tether_op)op);
        }
        tether__reduce_bf16_into_f32(acc, wire, N, (tether_op)op);
        for (int i = 0; i < N; i++)
            if (!same_float(acc[i], want[i]))
                fail_msg("bf16 wire op %d element %d: %.9g, want %.9g", op, i, acc[i], want[i]);
    }
}

static void test_bf16_wire_helpers(void **state)
{
    (void)state;
    for (int portable = 0; portable < 2; portable++) {
        tether__reduce_select(portable);
        check_bf16_wire_helpers();
    }
    tether__reduce_select(0);
}

/* ---- the fast kernel set against the portable one, bit for bit ---- */

/* 1 if this CPU has a kernel set other than the portable one (it is then the default). */
static int have_fast_set(void)
{
    return strcmp(tether__reduce_select(0), "portable") != 0;
}

static uint8_t *xmalloc(size_t bytes)
{
    uint8_t *p = malloc(bytes);
    assert_non_null(p);
    return p;
}

/* What one call does, under the set chosen before it. */
typedef enum { RUN_REDUCE, RUN_WIRE, RUN_TO_BF16, RUN_FROM_BF16, RUN_ROUND_BF16 } run_kind;

static void run(run_kind k, tether_dtype dt, tether_op op, void *dst, const void *src, size_t n)
{
    switch (k) {
    case RUN_REDUCE:
        assert_int_equal(tether__reduce(dst, src, n, dt, op), TETHER_OK);
        break;
    case RUN_WIRE:
        tether__reduce_bf16_into_f32(dst, src, n, op);
        break;
    case RUN_TO_BF16:
        tether__floats_to_bf16(dst, src, n);
        break;
    case RUN_FROM_BF16:
        tether__bf16_to_floats(dst, src, n);
        break;
    case RUN_ROUND_BF16:
        tether__round_to_bf16(dst, n);
        break;
    }
}

/* Run k over n elements (dst: dsize bytes each, src: ssize) under the portable and the fast set,
 * with dst and src placed doff and soff elements past an allocation (unaligned for the vectors),
 * src == dst if in_place; fail at the first element whose bits differ. */
static void same_bits(run_kind k, tether_dtype dt, tether_op op, const void *dst, size_t dsize,
                      const void *src, size_t ssize, size_t n, size_t doff, size_t soff,
                      int in_place)
{
    uint8_t *pbuf = xmalloc((n + doff) * dsize + 1), *fbuf = xmalloc((n + doff) * dsize + 1);
    uint8_t *sbuf = xmalloc((n + soff) * ssize + 1);
    uint8_t *p = pbuf + doff * dsize, *f = fbuf + doff * dsize, *sp = sbuf + soff * ssize;
    memcpy(p, dst, n * dsize);
    memcpy(f, dst, n * dsize);
    memcpy(sp, src, n * ssize);
    tether__reduce_select(1);
    run(k, dt, op, p, in_place ? p : sp, n);
    tether__reduce_select(0);
    run(k, dt, op, f, in_place ? f : sp, n);
    for (size_t i = 0; i < n; i++)
        if (memcmp(p + i * dsize, f + i * dsize, dsize)) {
            uint64_t pv = 0, fv = 0, dv = 0, sv = 0;
            memcpy(&pv, p + i * dsize, dsize);
            memcpy(&fv, f + i * dsize, dsize);
            memcpy(&dv, (const uint8_t *)dst + i * dsize, dsize);
            memcpy(&sv, (const uint8_t *)src + i * ssize, ssize < 8 ? ssize : 8);
            fail_msg("kind %d dtype %d op %d n %zu offsets %zu/%zu%s: element %zu (dst 0x%llx, src "
                     "0x%llx): "
                     "fast 0x%llx, portable 0x%llx",
                     (int)k, (int)dt, (int)op, n, doff, soff, in_place ? " in place" : "", i,
                     (unsigned long long)dv, (unsigned long long)sv, (unsigned long long)fv,
                     (unsigned long long)pv);
        }
    free(pbuf);
    free(fbuf);
    free(sbuf);
}

static void same_reduce(tether_dtype dt, tether_op op, const void *dst, const void *src, size_t n,
                        size_t doff, size_t soff)
{
    size_t es = tether_dtype_size(dt);
    same_bits(RUN_REDUCE, dt, op, dst, es, src, es, n, doff, soff, 0);
}

/* Bit patterns to pair with every 16-bit value: zeros, subnormals, the smallest normals, ones, the
 * largest finite values, infinities, quiet and signalling NaNs of both signs, in float16 and
 * bfloat16. */
static const uint16_t half_partners[] = {
    0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x3555, 0x7bff, 0xfbff,
    0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe55, 0x007f, 0x0080, 0x3f80, 0xbf80, 0x4049, 0x7f7f,
    0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1, 0x4000, 0x6400, 0x7800};

/* float16/bfloat16 MAX and MIN bit for bit, under every kernel set: every value against each
 * partner in both orders. The result is the operand that wins on the float values, +0 (MAX) or -0
 * (MIN) of -0 and +0 whatever the order, and the canonical NaN if either is a NaN. */
static void test_half_max_min_exact(void **state)
{
    (void)state;
    enum { N = 0x10000 };
    uint16_t *all = (uint16_t *)xmalloc(N * 2), *other = (uint16_t *)xmalloc(N * 2);
    uint16_t *dst = (uint16_t *)xmalloc(N * 2);
    for (uint32_t i = 0; i < N; i++)
        all[i] = (uint16_t)i;
    for (int portable = 0; portable < 2; portable++) {
        tether__reduce_select(portable);
        for (int bf = 0; bf < 2; bf++)
            for (int op = TETHER_MAX; op <= TETHER_MIN; op++)
                for (size_t p = 0; p < sizeof half_partners / sizeof half_partners[0]; p++)
                    for (int swap = 0; swap < 2; swap++) {
                        for (uint32_t i = 0; i < N; i++)
                            other[i] = half_partners[p];
                        const uint16_t *a = swap ? other : all, *b = swap ? all : other;
                        memcpy(dst, a, N * 2);
                        assert_int_equal(tether__reduce(dst, b, N,
                                                        bf ? TETHER_BFLOAT16 : TETHER_FLOAT16,
                                                        (tether_op)op),
                                         TETHER_OK);
                        for (uint32_t i = 0; i < N; i++) {
                            double fa =
                                bf ? (double)tether__bf16_to_float(a[i]) : ref_half_value(a[i]);
                            double fb =
                                bf ? (double)tether__bf16_to_float(b[i]) : ref_half_value(b[i]);
                            int b_wins = op == TETHER_MAX ? fb > fa : fb < fa;
                            uint16_t want = b_wins ? b[i] : a[i];
                            if (fa == fb) /* the same bits, or -0 and +0 */
                                want = op == TETHER_MAX ? a[i] & b[i] : a[i] | b[i];
                            if (isnan(fa) || isnan(fb))
                                want = bf ? 0x7fc0 : 0x7e00;
                            if (dst[i] != want)
                                fail_msg("%s %s op %d: 0x%04x, 0x%04x -> 0x%04x, want 0x%04x",
                                         portable ? "portable" : "fast",
                                         bf ? "bfloat16" : "float16", op, a[i], b[i], dst[i], want);
                        }
                    }
    }
    tether__reduce_select(0);
    free(all);
    free(other);
    free(dst);
}

/* float16 and bfloat16: all 65536 values as dst and as src against each partner, against every
 * value in reverse and against random values; lengths that leave tails, unaligned pointers. */
static void test_fast_halves_exhaustive(void **state)
{
    (void)state;
    if (!have_fast_set())
        skip();
    enum { N = 0x10000 };
    uint16_t *all = (uint16_t *)xmalloc(N * 2), *other = (uint16_t *)xmalloc(N * 2);
    for (uint32_t i = 0; i < N; i++)
        all[i] = (uint16_t)i;
    static const tether_dtype halves[] = {TETHER_FLOAT16, TETHER_BFLOAT16};
    for (size_t h = 0; h < 2; h++)
        for (int op = 0; op < TETHER_OP_COUNT; op++) {
            tether_dtype dt = halves[h];
            for (size_t p = 0; p < sizeof half_partners / sizeof half_partners[0]; p++) {
                for (uint32_t i = 0; i < N; i++)
                    other[i] = half_partners[p];
                same_reduce(dt, (tether_op)op, all, other, N, 0, 0);
                same_reduce(dt, (tether_op)op, other, all, N, 0, 0);
            }
            for (uint32_t i = 0; i < N; i++)
                other[i] = (uint16_t)(N - 1 - i);
            same_reduce(dt, (tether_op)op, all, other, N, 0, 0);
            same_reduce(dt, (tether_op)op, all, other, N - 5, 1,
                        3); /* tail of 3 or 11, unaligned */
            for (uint32_t i = 0; i < N; i++)
                other[i] = (uint16_t)rnd();
            same_reduce(dt, (tether_op)op, all, other, N, 0, 0);
            same_reduce(dt, (tether_op)op, other, all, N - 1, 3, 0);
            same_bits(RUN_REDUCE, dt, (tether_op)op, all, 2, all, 2, N, 1, 0,
                      1);                   /* in place: x OP x */
            for (size_t n = 0; n < 40; n++) /* every tail length, shifted by up to 7 elements */
                same_reduce(dt, (tether_op)op, all + 0x7bf0, other + n, n, n % 8, (n / 8) % 8);
        }
    free(all);
    free(other);
}

/* Random bits with the special values mixed in, for dtypes other than the half types. */
static void fill_bits(void *buf, size_t n, tether_dtype dt)
{
    /* zeros, subnormals, normal limits, one, infinities, NaNs; then bfloat16 rounding ties (low
     * half 0x8000: to even downwards, upwards, in a subnormal, into infinity, negative) */
    static const uint32_t f32_specials[] = {
        0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x00800000u, 0x3f800000u,
        0x7f7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u,
        0x7fa00000u, 0x3f808000u, 0x3f818000u, 0x00008000u, 0x7f7f8000u, 0xbf808000u};
    static const uint64_t f64_specials[] = {0,
                                            1ull << 63,
                                            1,
                                            0x800fffffffffffffull,
                                            0x0010000000000000ull,
                                            0x3ff0000000000000ull,
                                            0x7fefffffffffffffull,
                                            0x7ff0000000000000ull,
                                            0xfff0000000000000ull,
                                            0x7ff8000000000000ull,
                                            0xfff8000000000001ull,
                                            0x7ff0000000000001ull};
    size_t es = tether_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rnd();
        memcpy((uint8_t *)buf + i * es, &r, es);
        if ((dt == TETHER_FLOAT32 || dt == TETHER_COMPLEX64) && r % 4 == 0) {
            uint32_t v = f32_specials[(r >> 8) % (sizeof f32_specials / sizeof f32_specials[0])];
            memcpy((uint8_t *)buf + i * es, &v, 4);
        }
        if (dt == TETHER_FLOAT64 && r % 4 == 0)
            memcpy((uint8_t *)buf + i * es,
                   &f64_specials[(r >> 8) % (sizeof f64_specials / sizeof f64_specials[0])], 8);
    }
}

/* Every other kernel, and the bf16 wire kernels and conversions: random bits (NaN, infinities,
 * subnormals, -0 included), every length up to 70 at every alignment, and long runs. */
static void test_fast_matches_portable(void **state)
{
    (void)state;
    if (!have_fast_set())
        skip();
    enum { N = 20000 };
    uint8_t *a = xmalloc(N * 8), *b = xmalloc(N * 8);
    for (int dt = 0; dt < TETHER_DTYPE_COUNT; dt++)
        for (int op = 0; op < TETHER_OP_COUNT; op++) {
            if (!tether__op_valid((tether_dtype)dt, (tether_op)op))
                continue;
            fill_bits(a, N, (tether_dtype)dt);
            fill_bits(b, N, (tether_dtype)dt);
            size_t es = tether_dtype_size((tether_dtype)dt);
            same_reduce((tether_dtype)dt, (tether_op)op, a, b, N, 0, 0);
            same_bits(RUN_REDUCE, (tether_dtype)dt, (tether_op)op, a, es, a, es, N - 3, 3, 0, 1);
            for (size_t n = 0; n <= 70; n++)
                same_reduce((tether_dtype)dt, (tether_op)op, a, b, n, n % 5, n % 3);
        }
    /* wire: float32 dst OP= every bfloat16 value; conversions of random floats and every bfloat16
     */
    enum { H = 0x10000 };
    float *f = (float *)xmalloc(H * 4);
    uint16_t *all = (uint16_t *)xmalloc(H * 2);
    fill_bits(f, H, TETHER_FLOAT32);
    for (uint32_t i = 0; i < H; i++)
        all[i] = (uint16_t)i;
    for (int op = 0; op < TETHER_OP_COUNT; op++) {
        same_bits(RUN_WIRE, TETHER_FLOAT32, (tether_op)op, f, 4, all, 2, H, 0, 0, 0);
        for (size_t n = 0; n <= 40; n++)
            same_bits(RUN_WIRE, TETHER_FLOAT32, (tether_op)op, f, 4, all + 0x7f70, 2, n, n % 7,
                      n % 3, 0);
    }
    for (size_t n = 0; n <= 40; n++) {
        same_bits(RUN_TO_BF16, TETHER_BFLOAT16, TETHER_SUM, all, 2, f, 4, n, n % 3, n % 7, 0);
        same_bits(RUN_FROM_BF16, TETHER_FLOAT32, TETHER_SUM, f, 4, all + 0x7f70, 2, n, n % 7, n % 3,
                  0);
        same_bits(RUN_ROUND_BF16, TETHER_FLOAT32, TETHER_SUM, f, 4, f, 4, n, n % 7, 0, 1);
    }
    same_bits(RUN_TO_BF16, TETHER_BFLOAT16, TETHER_SUM, all, 2, f, 4, H, 0, 0, 0);
    same_bits(RUN_FROM_BF16, TETHER_FLOAT32, TETHER_SUM, f, 4, all, 2, H, 0, 0, 0);
    same_bits(RUN_ROUND_BF16, TETHER_FLOAT32, TETHER_SUM, f, 4, f, 4, H, 0, 0, 1);
    /* every bfloat16 pattern as the high half, with the low halves that decide the rounding: exact,
     * just below, at and above a tie, the largest; every NaN payload, subnormal and sign */
    static const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff};
    for (size_t l = 0; l < sizeof lows / sizeof lows[0]; l++) {
        for (uint32_t i = 0; i < H; i++)
            f[i] = f32_of(i << 16 | lows[l]);
        same_bits(RUN_TO_BF16, TETHER_BFLOAT16, TETHER_SUM, all, 2, f, 4, H, 0, 0, 0);
        same_bits(RUN_ROUND_BF16, TETHER_FLOAT32, TETHER_SUM, f, 4, f, 4, H, 0, 0, 1);
    }
    for (int round = 0; round < 8; round++) { /* 500k random floats through the conversions */
        fill_bits(f, H, TETHER_FLOAT32);
        same_bits(RUN_TO_BF16, TETHER_BFLOAT16, TETHER_SUM, all, 2, f, 4, H, 1, 1, 0);
        same_bits(RUN_ROUND_BF16, TETHER_FLOAT32, TETHER_SUM, f, 4, f, 4, H - 1, 1, 0, 1);
    }
    free(a);
    free(b);
    free(f);
    free(all);
}

/* arm64: the conversions with FPCR.DN (default NaN) on, which a program may set: BFCVT would then
 * give 0x7fc0 for every NaN, where f32_to_bf16 keeps its sign and payload. Every NaN payload's top
 * half, both signs, signalling and quiet, through to_bf16 and round_bf16 of the fast set. */
static void test_fast_conversions_default_nan(void **state)
{
    (void)state;
#if defined(__aarch64__) && defined(__GNUC__)
    if (!have_fast_set())
        skip();
    enum { H = 0x10000 };
    float *f = (float *)xmalloc(H * 4);
    uint16_t *b = (uint16_t *)xmalloc(H * 2);
    for (uint32_t i = 0; i < H; i++) /* exponent all ones, payload from i */
        f[i] = f32_of((i & 0x8000u) << 16 | 0x7f800000u | (i & 0x7fffu) << 8 | 0x80u);
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr | 1u << 25)); /* DN */
    same_bits(RUN_TO_BF16, TETHER_BFLOAT16, TETHER_SUM, b, 2, f, 4, H, 0, 0, 0);
    same_bits(RUN_ROUND_BF16, TETHER_FLOAT32, TETHER_SUM, f, 4, f, 4, H, 0, 0, 1);
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
    free(f);
    free(b);
#else
    skip(); /* FPCR is arm64's */
#endif
}

/* SUM, PROD, MAX and MIN give the canonical NaN (quiet, positive, no payload) whatever NaN went in,
 * under every kernel set: two NaNs in either order, a NaN and a number, inf - inf (SUM), 0 * inf
 * (PROD). */
typedef struct nan_case {
    int ops; /* 1: SUM, 2: PROD, 4: MAX, 8: MIN */
    uint32_t f32[2];
    uint16_t f16[2], bf16[2];
} nan_case;

static const nan_case nan_cases[] = {
    {15, {0x7fc00001u, 0xffc00002u}, {0x7e01, 0xfe02}, {0x7fc1, 0xffc2}},
    {15, {0xffc00002u, 0x7fc00001u}, {0xfe02, 0x7e01}, {0xffc2, 0x7fc1}},
    {15, {0x7f800001u, 0x3f800000u}, {0xfc01, 0x3c00}, {0xff81, 0x3f80}},
    {15, {0x3f800000u, 0xff800003u}, {0x3c00, 0x7c03}, {0x3f80, 0x7f83}},
    {1, {0x7f800000u, 0xff800000u}, {0x7c00, 0xfc00}, {0x7f80, 0xff80}},
    {2, {0x80000000u, 0x7f800000u}, {0x8000, 0x7c00}, {0x8000, 0x7f80}},
};

static void test_canonical_nan(void **state)
{
    (void)state;
    enum { N = 37 }; /* vector bodies and tails */
    for (int portable = 0; portable < 2; portable++) {
        tether__reduce_select(portable);
        for (size_t k = 0; k < sizeof nan_cases / sizeof nan_cases[0]; k++)
            for (int op = TETHER_SUM; op <= TETHER_MIN; op++) {
                const nan_case *c = &nan_cases[k];
                if (!(c->ops & (1 << op)))
                    continue;
                uint32_t f[N], fb[N];
                uint16_t h[N], hb[N], bf[N], bfb[N];
                double x[N], y[N];
                for (int i = 0; i < N; i++) {
                    f[i] = c->f32[0], fb[i] = c->f32[1];
                    h[i] = c->f16[0], hb[i] = c->f16[1];
                    bf[i] = c->bf16[0], bfb[i] = c->bf16[1];
                    x[i] = (double)f32_of(c->f32[0]), y[i] = (double)f32_of(c->f32[1]);
                }
                assert_int_equal(tether__reduce(f, fb, N, TETHER_FLOAT32, (tether_op)op),
                                 TETHER_OK);
                assert_int_equal(tether__reduce(h, hb, N, TETHER_FLOAT16, (tether_op)op),
                                 TETHER_OK);
                assert_int_equal(tether__reduce(bf, bfb, N, TETHER_BFLOAT16, (tether_op)op),
                                 TETHER_OK);
                assert_int_equal(tether__reduce(x, y, N, TETHER_FLOAT64, (tether_op)op), TETHER_OK);
                for (int i = 0; i < N; i++) {
                    uint64_t d;
                    memcpy(&d, &x[i], 8);
                    if (f[i] != 0x7fc00000u || h[i] != 0x7e00 || bf[i] != 0x7fc0 ||
                        d != 0x7ff8000000000000ull)
                        fail_msg("%s case %zu op %d element %d: float32 0x%08x float16 0x%04x "
                                 "bfloat16 0x%04x "
                                 "float64 0x%016llx, want the canonical NaN",
                                 portable ? "portable" : "fast", k, op, i, f[i], h[i], bf[i],
                                 (unsigned long long)d);
                }
            }
    }
    tether__reduce_select(0);
}

/* Element i of an array of es-byte elements from the low bytes of v: load_i's inverse. */
static void put_bits(void *buf, size_t i, size_t es, uint64_t v)
{
    memcpy((uint8_t *)buf + i * es, &v, es);
}

/* -0 and +0 in either order, under every kernel set: MAX gives +0 and MIN -0, the same bits
 * whichever operand came first (ranks of a tree reduce in different orders and must agree). Every
 * float dtype and the bf16 wire kernels (float32 dst, bfloat16 src); 37 elements: vector bodies
 * and tails. */
static void test_signed_zero_max_min(void **state)
{
    (void)state;
    enum { N = 37 };
    typedef struct zero_case {
        tether_dtype dt;
        int wire; /* the bf16 wire kernel: float32 dst, bfloat16 src */
        size_t dsize, ssize;
        uint64_t dneg, sneg, want_neg; /* -0 in dst, in src, and in the result */
    } zero_case;
    static const zero_case cases[] = {
        {TETHER_FLOAT16, 0, 2, 2, 0x8000, 0x8000, 0x8000},
        {TETHER_BFLOAT16, 0, 2, 2, 0x8000, 0x8000, 0x8000},
        {TETHER_FLOAT32, 0, 4, 4, 0x80000000u, 0x80000000u, 0x80000000u},
        {TETHER_FLOAT64, 0, 8, 8, 1ull << 63, 1ull << 63, 1ull << 63},
        {TETHER_FLOAT32, 1, 4, 2, 0x80000000u, 0x8000, 0x80000000u},
    };
    uint8_t dst[N * 8], src[N * 8];
    for (int portable = 0; portable < 2; portable++) {
        tether__reduce_select(portable);
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
            for (int op = TETHER_MAX; op <= TETHER_MIN; op++)
                for (int neg_in_dst = 0; neg_in_dst < 2; neg_in_dst++) {
                    const zero_case *c = &cases[k];
                    for (size_t i = 0; i < N; i++) {
                        put_bits(dst, i, c->dsize, neg_in_dst ? c->dneg : 0);
                        put_bits(src, i, c->ssize, neg_in_dst ? 0 : c->sneg);
                    }
                    if (c->wire)
                        tether__reduce_bf16_into_f32((float *)dst, (uint16_t *)src, N,
                                                     (tether_op)op);
                    else
                        assert_int_equal(tether__reduce(dst, src, N, c->dt, (tether_op)op),
                                         TETHER_OK);
                    uint64_t want = op == TETHER_MAX ? 0 : c->want_neg;
                    for (size_t i = 0; i < N; i++)
                        if (load_i(dst, i, c->dsize) != want)
                            fail_msg("%s %s dtype %d op %d, -0 in %s: element %zu is 0x%llx, want "
                                     "0x%llx",
                                     portable ? "portable" : "fast", c->wire ? "wire" : "reduce",
                                     (int)c->dt, op, neg_in_dst ? "dst" : "src", i,
                                     (unsigned long long)load_i(dst, i, c->dsize),
                                     (unsigned long long)want);
                }
    }
    tether__reduce_select(0);
}

static void test_select(void **state)
{
    (void)state;
    assert_string_equal(tether__reduce_select(1), "portable");
    const char *best = tether__reduce_select(0);
#if defined(__x86_64__)
    assert_true(!strcmp(best, "avx2") || !strcmp(best, "portable"));
#elif defined(__aarch64__) && defined(__linux__)
    /* a NEON set exactly when the CPU reports Advanced SIMD (every arm64 CPU Linux runs on; qemu's
     * too), with half arithmetic where it reports FEAT_FP16 and BFCVT where it reports FEAT_BF16
     * too, so the fast-against-portable tests below compare the NEON kernels
     * (scripts/cross-aarch64.sh runs them on a qemu CPU of each kind) */
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    if (!(hw & HWCAP_ASIMD))
        assert_string_equal(best, "portable");
    else if (!(hw & HWCAP_ASIMDHP))
        assert_string_equal(best, "neon");
    else
        assert_string_equal(best,
                            hw2 & (1ul << 14) /* HWCAP2_BF16 */ ? "neon+fp16+bf16" : "neon+fp16");
#elif defined(__aarch64__)
    assert_true(!strncmp(best, "neon", 4) || !strcmp(best, "portable"));
#else
    assert_string_equal(best, "portable");
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kernel),
        cmocka_unit_test(test_invalid_ops),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_bool_semantics),
        cmocka_unit_test(test_half_to_float_exhaustive),
        cmocka_unit_test(test_float_to_half),
        cmocka_unit_test(test_float_to_bf16),
        cmocka_unit_test(test_bf16_wire_helpers),
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_canonical_nan),
        cmocka_unit_test(test_signed_zero_max_min),
        cmocka_unit_test(test_half_max_min_exact),
        cmocka_unit_test(test_fast_halves_exhaustive),
        cmocka_unit_test(test_fast_matches_portable),
        cmocka_unit_test(test_fast_conversions_default_nan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
