"""average_gradients: the mean by hand, structure kept, inputs untouched, buckets as specified."""

import numpy as np
import pytest

import tether
from inputs import all_inputs, rank_input
from tether.gradients import _buckets

SHAPES = {"w": ((4, 3), np.float32), "b": ((3,), np.float32), "h": ((2, 2), np.float64),
          "e": ((5,), np.float16)}


def make_tree(rank):
    leaf = {k: rank_input(rank, shape, dtype, seed=30 + i)
            for i, (k, (shape, dtype)) in enumerate(SHAPES.items())}
    return {"w": leaf["w"], "layers": [leaf["b"], (leaf["h"], leaf["e"])]}


@pytest.mark.parametrize("bucket_bytes", [16, 1 << 25], ids=["tiny-buckets", "default"])
def test_mean_by_hand(world, bucket_bytes):
    tree = make_tree(world.rank())
    before = {k: v.copy() for k, v in [("w", tree["w"]), ("b", tree["layers"][0])]}
    got = tether.average_gradients(tree, bucket_bytes=bucket_bytes)
    assert isinstance(got, dict) and isinstance(got["layers"], list)
    assert isinstance(got["layers"][1], tuple)

    def mean(i, key):
        shape, dtype = SHAPES[key]
        return all_inputs(range(world.size()), shape, dtype, 30 + i).sum(axis=0) / \
            np.asarray(world.size(), dtype)

    np.testing.assert_array_equal(got["w"], mean(0, "w"))
    np.testing.assert_array_equal(got["layers"][0], mean(1, "b"))
    np.testing.assert_array_equal(got["layers"][1][0], mean(2, "h"))
    np.testing.assert_array_equal(got["layers"][1][1], mean(3, "e"))
    assert got["layers"][1][1].dtype == np.float16
    np.testing.assert_array_equal(tree["w"], before["w"])  # inputs not modified
    np.testing.assert_array_equal(tree["layers"][0], before["b"])


def test_integer_gradients_rejected(world):
    with pytest.raises(TypeError, match="floating point"):
        tether.average_gradients([np.ones(3, np.int32)])


def test_buckets_group_by_dtype_and_size():
    f4 = [np.zeros(n, np.float32) for n in (2, 2, 3, 10)]  # 8, 8, 12, 40 bytes
    f8 = np.zeros(1, np.float64)
    leaves = [f4[0], f8, f4[1], f4[2], f4[3]]
    assert sorted(_buckets(leaves, 16)) == [[0, 2], [1], [3], [4]]
    assert sorted(_buckets(leaves, 1 << 20)) == [[0, 2, 3, 4], [1]]
