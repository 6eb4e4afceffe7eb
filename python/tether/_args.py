"""Checks of the integers passed to C. ctypes wraps a Python int that does not fit a C int
(2**32 becomes 0, 2**31 becomes -2**31) instead of failing, so a rank or colour out of range would
reach the library as another, valid-looking value; each is checked here, naming the argument."""

import ctypes
import operator

INT_MAX = 2 ** (8 * ctypes.sizeof(ctypes.c_int) - 1) - 1
INT_MIN = -INT_MAX - 1


def c_int(value, call, name):
    """value as an int that fits a C int (bools and numpy integers included): TypeError when it
    is not an integer, ValueError when it does not fit; both name call and name."""
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{call}: {name} must be an integer, got {type(value).__name__} "
                        f"{value!r}") from None
    if not INT_MIN <= number <= INT_MAX:
        raise ValueError(f"{call}: {name}={number} is out of range: it must fit a C int "
                         f"({INT_MIN}..{INT_MAX})")
    return number
