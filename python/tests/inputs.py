"""Each rank's deterministic test input, so any rank can rebuild what every other rank sent and
check a collective's result against numpy's own reduction of it."""

import numpy as np

from tether import _dtypes

#: Every dtype the package maps, with bfloat16 only where ml_dtypes provides it.
DTYPES = list(_dtypes.supported())


def rank_input(rank, shape, dtype, seed=0):
    """Rank's input for one test: small integers (halves for inexact types), so that sums and
    products of up to 4 ranks are exact in every dtype, whatever order the ranks are reduced in.
    """
    dtype = np.dtype(dtype)
    rng = np.random.default_rng([seed, rank, _dtypes.code_of(dtype)])
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    low = 0 if dtype.kind == "u" else -3
    values = rng.integers(low, 4, size=shape)
    if dtype.kind == "c":
        values = values + 1j * rng.integers(low, 4, size=shape)
    if dtype.kind in "iub":
        return values.astype(dtype)
    return (values / 2).astype(dtype)


def all_inputs(ranks, shape, dtype, seed=0):
    """The inputs of the given (world) ranks, stacked along a new first axis in that order."""
    return np.stack([rank_input(r, shape, dtype, seed) for r in ranks])


# numpy's reduction for each tether_op; bool follows tether.h: sum and max are or, prod and min and.
_REDUCERS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
_BOOL_REDUCERS = {"sum": np.logical_or, "prod": np.logical_and, "max": np.logical_or,
                  "min": np.logical_and}


def reference(stacked, op):
    """op over the first axis of stacked, in stacked's dtype."""
    reducers = _BOOL_REDUCERS if stacked.dtype == np.bool_ else _REDUCERS
    return reducers[op].reduce(stacked, axis=0).astype(stacked.dtype)


def dtype_id(dtype):
    """Test id of a dtype parameter: its name."""
    return np.dtype(dtype).name
