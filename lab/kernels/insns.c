/* lab/kernels/insns.c - one reduction kernel call over n elements, for counting the instructions
 * it executes under an emulator (lab/kernels/insns.sh runs it under qemu-aarch64 at two lengths
 * and divides the difference by the difference of lengths: instructions per element, start-up
 * and tail excluded).
 * usage: insns portable|fast KERNEL DTYPE OP N
 * KERNEL: reduce (dtype, op), wire (float32 OP= bfloat16), to_bf16, or none (the set-up alone, to
 * subtract); DTYPE and OP are numbers (tether_dtype, tether_op). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/reduce.h"
#include "tether.h"

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: insns portable|fast reduce|wire|to_bf16|none DTYPE OP N\n");
        return 2;
    }
    tether__reduce_select(!strcmp(argv[1], "portable"));
    tether_dtype dt = (tether_dtype)atoi(argv[3]);
    tether_op op = (tether_op)atoi(argv[4]);
    size_t n = strtoul(argv[5], NULL, 10);
    /* small integers as every type: no NaN or overflow path on the way; w: the same as bfloat16 */
    unsigned char *a = calloc(n, 8), *b = calloc(n, 8);
    uint16_t *w = calloc(n, 2);
    if (!a || !b || !w)
        return 1;
    size_t es = tether_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        float f = (float)(i % 7 + 1);
        uint16_t h = tether__float_to_half(f);
        double d = f;
        w[i] = tether__float_to_bf16(f);
        const void *v = dt == TETHER_FLOAT16    ? (const void *)&h
                        : dt == TETHER_BFLOAT16 ? (const void *)&w[i]
                        : dt == TETHER_FLOAT64  ? (const void *)&d
                                                : (const void *)&f;
        memcpy(a + i * es, v, es);
        memcpy(b + i * es, v, es);
    }
    if (!strcmp(argv[2], "wire"))
        tether__reduce_bf16_into_f32((float *)a, w, n, op);
    else if (!strcmp(argv[2], "to_bf16"))
        tether__floats_to_bf16(w, (float *)a, n);
    else if (!strcmp(argv[2], "reduce") && tether__reduce(a, b, n, dt, op) != TETHER_OK)
        return 1;
    free(a);
    free(b);
    free(w);
    return 0;
}
