"""average_gradients: the mean of a tree of arrays over the ranks, in a few large all-reduces.

One all-reduce per small gradient pays the per-call latency many times over; packing arrays of
one dtype into buckets of up to bucket_bytes pays it once per bucket (mlx.nn.average_gradients
does the same).
"""

import numpy as np

from ._dtypes import as_input
from .collectives import all_sum
from .group import resolve

DEFAULT_BUCKET_BYTES = 32 << 20


def _flatten(tree, leaves):
    """Append tree's leaves to leaves in a fixed order (dict insertion order, list order) and
    return a function rebuilding the same structure from an iterator over new leaves."""
    if isinstance(tree, dict):
        builders = {k: _flatten(v, leaves) for k, v in tree.items()}
        return lambda it: {k: build(it) for k, build in builders.items()}
    if isinstance(tree, (list, tuple)):
        builders = [_flatten(v, leaves) for v in tree]
        kind = type(tree)
        return lambda it: kind(build(it) for build in builders)
    leaves.append(as_input(tree))
    return lambda it: next(it)


def _buckets(leaves, bucket_bytes):
    """Lists of leaf indices to reduce together: same dtype, at most bucket_bytes each (a leaf
    bigger than that goes alone). Greedy in leaf order, so every rank cuts the same buckets."""
    open_bucket = {}  # dtype -> (indices, bytes) of the bucket being filled
    done = []
    for i, leaf in enumerate(leaves):
        indices, nbytes = open_bucket.get(leaf.dtype, ([], 0))
        if indices and nbytes + leaf.nbytes > bucket_bytes:
            done.append(indices)
            indices, nbytes = [], 0
        open_bucket[leaf.dtype] = (indices + [i], nbytes + leaf.nbytes)
    return done + [indices for indices, _ in open_bucket.values()]


def average_gradients(gradients, group=None, all_reduce_size=None, communication_type=None,
                      communication_stream=None, *, bucket_bytes=DEFAULT_BUCKET_BYTES):
    """The element-wise mean over the ranks of a tree (dict, list, tuple, nested) of floating
    point arrays, as new arrays in the same structure; the inputs are not modified.

    Every rank must pass the same structure with the same shapes and dtypes. The arguments are
    mlx.nn.average_gradients': all_reduce_size is bucket_bytes' MLX name (0 or less: one
    all-reduce per array); communication_type (a numpy dtype, e.g. float16) is the type the
    values travel in, cast back after; communication_stream is accepted and ignored.
    """
    if all_reduce_size is not None:
        bucket_bytes = all_reduce_size if all_reduce_size > 0 else 1
    g = resolve(group)
    leaves = []
    rebuild = _flatten(gradients, leaves)
    for leaf in leaves:
        if leaf.dtype.kind not in "fc" and leaf.dtype.name != "bfloat16":
            raise TypeError(f"average_gradients averages floating point arrays; got {leaf.dtype}")
    averaged = [None] * len(leaves)
    for indices in _buckets(leaves, bucket_bytes):
        flat = np.concatenate([leaves[i].reshape(-1) for i in indices])
        if communication_type is not None:
            wire = all_sum(flat.astype(communication_type), group=g)
            flat = wire.astype(flat.dtype)
        else:
            all_sum(flat, group=g, out=flat)
        flat /= g.size()
        offset = 0
        for i in indices:
            averaged[i] = flat[offset:offset + leaves[i].size].reshape(leaves[i].shape)
            offset += leaves[i].size
    return rebuild(iter(averaged))
