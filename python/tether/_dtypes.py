"""numpy dtypes <-> tether_dtype codes, and turning the inputs of a call into C-ready arrays."""

import numpy as np

from . import _lib

try:  # numpy has no bfloat16; ml_dtypes (the one JAX and others use) adds it when installed.
    from ml_dtypes import bfloat16
except ImportError:
    bfloat16 = None

_codes = None  # np.dtype -> tether_dtype code, from the library's names once it is loaded


def codes():
    """{np.dtype: tether_dtype code} for every dtype tether can move here, in the library's order:
    its tether_dtype_name (numpy's spelling) for each code. bfloat16 needs ml_dtypes."""
    global _codes
    if _codes is None:
        table = {}
        for name, code in _lib.names(_lib.get().tether_dtype_name).items():
            if name == "bfloat16":
                if bfloat16 is not None:
                    table[np.dtype(bfloat16)] = code
            else:
                table[np.dtype(name)] = code
        _codes = table
    return _codes


def supported():
    """Every numpy dtype tether can move, in the library's order."""
    return tuple(codes())


def code_of(dtype):
    """The tether_dtype code of a numpy dtype; TypeError naming the supported ones otherwise."""
    dtype = np.dtype(dtype)
    code = codes().get(dtype.newbyteorder("=") if not dtype.isnative else dtype)
    if code is None:
        names = ", ".join(str(d) for d in supported())
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
