"""numpy dtypes <-> tether_dtype codes, and turning the inputs of a call into C-ready arrays."""

import numpy as np

# The tether_dtype enum of include/tether.h, in declaration order (the values are positional).
(BOOL, INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64,
 FLOAT16, BFLOAT16, FLOAT32, FLOAT64, COMPLEX64) = range(14)

try:  # numpy has no bfloat16; ml_dtypes (the one JAX and others use) adds it when installed.
    from ml_dtypes import bfloat16
except ImportError:
    bfloat16 = None

_CODES = {
    np.dtype(np.bool_): BOOL,
    np.dtype(np.int8): INT8,
    np.dtype(np.uint8): UINT8,
    np.dtype(np.int16): INT16,
    np.dtype(np.uint16): UINT16,
    np.dtype(np.int32): INT32,
    np.dtype(np.uint32): UINT32,
    np.dtype(np.int64): INT64,
    np.dtype(np.uint64): UINT64,
    np.dtype(np.float16): FLOAT16,
    np.dtype(np.float32): FLOAT32,
    np.dtype(np.float64): FLOAT64,
    np.dtype(np.complex64): COMPLEX64,
}
if bfloat16 is not None:
    _CODES[np.dtype(bfloat16)] = BFLOAT16

#: Every dtype tether can move, in enum order.
SUPPORTED = tuple(_CODES)


def code_of(dtype):
    """The tether_dtype code of a numpy dtype; TypeError naming the supported ones otherwise."""
    dtype = np.dtype(dtype)
    code = _CODES.get(dtype.newbyteorder("=") if not dtype.isnative else dtype)
    if code is None:
        names = ", ".join(str(d) for d in SUPPORTED)
        hint = "" if bfloat16 is not None else " (bfloat16 needs the ml_dtypes package)"
        raise TypeError(f"tether cannot move dtype {dtype}; supported: {names}{hint}")
    return code


def as_input(x):
    """x (anything with the buffer protocol, or a scalar) as a C-contiguous, native-endian array.

    No copy when x already is one; non-contiguous or byte-swapped inputs are copied.
    """
    arr = np.asarray(x)
    code_of(arr.dtype)  # reject unsupported dtypes before copying anything
    if not arr.dtype.isnative:
        return arr.astype(arr.dtype.newbyteorder("="), order="C")
    # Not np.ascontiguousarray: it turns a 0-d array into shape (1,).
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def as_output(out, shape, dtype):
    """The array to write a result into: a new one, or out checked to fit (no silent copy, since
    a copy would lose the result). out may be any writable buffer: numpy array, array.array..."""
    if out is None:
        return np.empty(shape, dtype)
    arr = np.asarray(out)
    if arr.shape != tuple(shape) or arr.dtype != dtype:
        raise ValueError(f"out has shape {arr.shape} and dtype {arr.dtype}; "
                         f"this call needs shape {tuple(shape)} and dtype {dtype}")
    if not (arr.flags.c_contiguous and arr.flags.writeable):
        raise ValueError("out must be writable and C-contiguous")
    return arr
