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


def test_mlx_argument_order(alone):
    """mx.distributed.init(strict=False, backend="any"): strict first; a string first is a backend."""
    assert tether.init(False) is alone and tether.init(False, "any") is alone
    assert tether.init(strict=False, backend="any") is alone
    with pytest.raises(tether.TetherError) as err:
        tether.init(True)
    assert err.value.name == "TETHER_EUNAVAIL"
    with tether.init(False, "singleton") as other:
        assert other is not alone
    with pytest.raises(tether.TetherError) as err:
        tether.init(True, "jaccl")  # MLX's name for rdma: known, not configured here
    assert err.value.name in ("TETHER_EUNAVAIL",) and "rdma" in err.value.detail
    with pytest.raises(TypeError):
        tether.init(False, 3)


def test_is_available_default_asks_for_any(alone):
    assert tether.is_available() is False  # nothing configured in this environment
    assert tether.is_available("jaccl") is False


def test_stream_is_accepted(alone):
    x = np.arange(4, dtype=np.float32)
    for fn in (tether.all_sum, tether.all_prod, tether.all_max, tether.all_min,
               tether.all_gather, tether.sum_scatter, tether.all_to_all, tether.broadcast):
        np.testing.assert_array_equal(fn(x, stream="cpu"), x, err_msg=fn.__name__)
    tether.barrier(stream=None)


def test_average_gradients_mlx_arguments(alone):
    grads = [np.ones(3, np.float32), np.full(2, 0.25, np.float64)]
    for kwargs in ({"all_reduce_size": 0}, {"all_reduce_size": 8},
                   {"communication_type": np.float16}, {"communication_stream": "cpu"}):
        got = tether.average_gradients(grads, None, **kwargs)
        np.testing.assert_array_equal(got[0], grads[0])
        np.testing.assert_array_equal(got[1], grads[1])
        assert got[1].dtype == np.float64  # cast back after travelling as communication_type
