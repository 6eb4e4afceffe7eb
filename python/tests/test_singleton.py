"""The singleton path: with no tether configuration in the environment, init() gives a group of
size 1 where every collective is a local copy. Run this file without `tether launch`."""

import numpy as np
import pytest

import tether


@pytest.fixture(scope="module")
def alone():
    group = tether.init()
    assert group.size() == 1, "test_singleton.py must run without tether launch"
    return group


def test_world_of_one(alone):
    assert (alone.rank(), alone.size(), alone.backend) == (0, 1, "singleton")
    assert tether.init() is alone and tether.init("any") is alone
    assert repr(alone) == "<tether.Group rank 0 of 1 (singleton)>"


def test_strict_without_configuration_is_unavailable(alone):
    with pytest.raises(tether.TetherError) as err:
        tether.init(strict=True)
    assert err.value.name == "TETHER_EUNAVAIL" and err.value.detail


def test_unknown_backend(alone):
    with pytest.raises(tether.TetherError) as err:
        tether.init("carrier-pigeon")
    assert err.value.name == "TETHER_EINVAL" and "carrier-pigeon" in err.value.detail


def test_is_available(alone):
    assert tether.is_available("singleton")
    assert not tether.is_available("mesh")  # no hostfile or coordinator in this environment


def test_explicit_singleton_is_a_new_group(alone):
    with tether.init("singleton") as other:
        assert other is not alone and other.size() == 1
    assert tether.init() is alone


def test_every_collective_is_a_copy(alone):
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    for fn in (tether.all_sum, tether.all_prod, tether.all_max, tether.all_min,
               tether.all_gather, tether.sum_scatter, tether.all_to_all, tether.broadcast):
        got = fn(x)
        assert got is not x and got.shape == x.shape, fn.__name__
        np.testing.assert_array_equal(got, x, err_msg=fn.__name__)
    tether.barrier()


def test_average_gradients_of_one(alone):
    grads = {"a": np.ones(3, np.float32), "b": [np.full((2, 2), 0.5)]}
    got = tether.average_gradients(grads)
    np.testing.assert_array_equal(got["a"], grads["a"])
    np.testing.assert_array_equal(got["b"][0], grads["b"][0])
    assert got["a"] is not grads["a"]
