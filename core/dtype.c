/* core/dtype.c - what the library says about its dtypes and ops: each dtype's size, and the names
 * that messages print and bindings build their tables from (never the enums' positions). */
#include "tether.h"

size_t tether_dtype_size(tether_dtype dt)
{
    static const size_t sizes[TETHER_DTYPE_COUNT] = {
        [TETHER_BOOL] = 1,    [TETHER_INT8] = 1,      [TETHER_UINT8] = 1,    [TETHER_INT16] = 2,
        [TETHER_UINT16] = 2,  [TETHER_INT32] = 4,     [TETHER_UINT32] = 4,   [TETHER_INT64] = 8,
        [TETHER_UINT64] = 8,  [TETHER_FLOAT16] = 2,   [TETHER_BFLOAT16] = 2, [TETHER_FLOAT32] = 4,
        [TETHER_FLOAT64] = 8, [TETHER_COMPLEX64] = 8,
    };
    return ((int)dt >= 0 && dt < TETHER_DTYPE_COUNT) ? sizes[dt] : 0;
}

const char *tether_dtype_name(int dt)
{
    /* numpy's names, so a binding maps np.dtype(name) to the code */
    static const char *const names[TETHER_DTYPE_COUNT] = {
        [TETHER_BOOL] = "bool",         [TETHER_INT8] = "int8",
        [TETHER_UINT8] = "uint8",       [TETHER_INT16] = "int16",
        [TETHER_UINT16] = "uint16",     [TETHER_INT32] = "int32",
        [TETHER_UINT32] = "uint32",     [TETHER_INT64] = "int64",
        [TETHER_UINT64] = "uint64",     [TETHER_FLOAT16] = "float16",
        [TETHER_BFLOAT16] = "bfloat16", [TETHER_FLOAT32] = "float32",
        [TETHER_FLOAT64] = "float64",   [TETHER_COMPLEX64] = "complex64",
    };
    return dt >= 0 && dt < TETHER_DTYPE_COUNT ? names[dt] : NULL;
}

const char *tether_op_name(int op)
{
    static const char *const names[TETHER_OP_COUNT] = {
        [TETHER_SUM] = "sum", [TETHER_PROD] = "prod", [TETHER_MAX] = "max", [TETHER_MIN] = "min"};
    return op >= 0 && op < TETHER_OP_COUNT ? names[op] : NULL;
}
