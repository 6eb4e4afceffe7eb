"""Errors found before any byte moves: the right exception on every rank, and the group stays
usable afterwards (each test ends with a working collective to prove it)."""

import numpy as np
import pytest

import tether


def still_works(world):
    assert tether.all_sum(np.ones(2, np.int32)).tolist() == [world.size()] * 2


@pytest.mark.parametrize("value", [np.zeros(3, np.complex128), np.array(["a", "b"]),
                                   np.zeros(2, object)], ids=["complex128", "str", "object"])
def test_unsupported_dtype_is_type_error(world, value):
    with pytest.raises(TypeError, match="supported: bool"):
        tether.all_sum(value)
    with pytest.raises(TypeError):
        tether.recv((2,), value.dtype, 0)
    still_works(world)


def test_bad_root(world):
    with pytest.raises(tether.TetherError) as err:
        tether.broadcast(np.zeros(2), root=world.size())
    assert err.value.name == "TETHER_EINVAL" and err.value.status == -1
    assert "root" in err.value.detail
    still_works(world)


@pytest.mark.parametrize("peer", ["self", "too big", "negative"])
def test_bad_peer(world, peer):
    dst = {"self": world.rank(), "too big": world.size(), "negative": -1}[peer]
    with pytest.raises(tether.TetherError, match="TETHER_EINVAL"):
        tether.send(np.zeros(2), dst)
    with pytest.raises(tether.TetherError, match="TETHER_EINVAL"):
        tether.recv(2, np.float64, dst)
    still_works(world)


def test_any_source_alone(world):
    """A group of size 1 has nobody to receive from: TETHER_EINVAL, as in C."""
    with world.split(world.rank()) as alone:
        with pytest.raises(tether.TetherError, match="TETHER_EINVAL"):
            tether.recv(2, np.float64, tether.ANY, group=alone)
    still_works(world)


def test_error_carries_status_name_and_detail(world):
    with pytest.raises(tether.TetherError) as err:
        tether.send(np.zeros(1), world.size() + 5)
    e = err.value
    assert (e.status, e.name) == (-1, "TETHER_EINVAL")
    assert str(world.size() + 5) in e.detail  # tether_last_error() names the bad value
    assert str(e).startswith("TETHER_EINVAL: ")


def test_unknown_op(world):
    with pytest.raises(ValueError, match="unknown op"):
        tether.reduce_scatter(np.zeros(world.size()), "mean")
    still_works(world)


def test_shapes_that_do_not_split(world):
    with pytest.raises(ValueError, match="divides by the group size"):
        tether.sum_scatter(np.zeros(world.size() + 1) if world.size() > 1 else np.float32(1))
    with pytest.raises(ValueError, match="divides by the group size"):
        tether.all_to_all(np.float32(1))
    still_works(world)


def test_out_that_does_not_fit(world):
    with pytest.raises(ValueError, match="shape"):
        tether.all_sum(np.zeros(3), out=np.zeros(4))
    with pytest.raises(ValueError, match="dtype"):
        tether.all_sum(np.zeros(3), out=np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        tether.all_sum(np.zeros(3), out=np.zeros(6)[::2])
    x = np.zeros(2 * world.size())
    with pytest.raises(ValueError, match="overlap"):
        tether.all_to_all(x, out=x)
    still_works(world)


def test_closed_group(world):
    child = world.split(0)
    child.close()
    child.close()  # idempotent
    assert child.closed and "closed" in repr(child)
    with pytest.raises(ValueError, match="closed"):
        tether.all_sum(np.zeros(1), group=child)
    still_works(world)


# Integers that do not fit a C int: ctypes wrapped them (2**32 to 0) into another, valid-looking
# rank, so broadcast returned memory nobody wrote and send reached rank 1.
@pytest.mark.parametrize("root", [2 ** 32, 2 ** 32 + 1, -2 ** 31 - 1, 2 ** 63])
def test_root_out_of_c_int_range(world, root):
    with pytest.raises(ValueError, match=r"broadcast: root=-?\d+ is out of range"):
        tether.broadcast(np.ones(3), root=root)
    still_works(world)


def test_root_not_an_integer(world):
    with pytest.raises(TypeError, match="broadcast: root must be an integer, got float"):
        tether.broadcast(np.ones(3), root=0.0)
    still_works(world)


@pytest.mark.parametrize("peer", [2 ** 32, 2 ** 32 + 1, -2 ** 32])
def test_peer_out_of_c_int_range(world, peer):
    with pytest.raises(ValueError, match="send: dst=.* is out of range"):
        tether.send(np.ones(2), peer)
    with pytest.raises(ValueError, match="recv: src=.* is out of range"):
        tether.recv((2,), np.float64, peer)
    with pytest.raises(ValueError, match="recv: src=.* is out of range"):
        tether.recv_like(np.ones(2), peer)
    with pytest.raises(TypeError, match="send: dst must be an integer"):
        tether.send(np.ones(2), "1")
    still_works(world)


@pytest.mark.parametrize("color, key", [(2 ** 31, -1), (0, 2 ** 31), (-2 ** 31 - 1, 0)])
def test_split_out_of_c_int_range(world, color, key):
    with pytest.raises(ValueError, match="split: (color|key)=.* is out of range"):
        world.split(color, key)
    still_works(world)


def test_is_available_none_means_any(world):
    assert tether.is_available(None) == tether.is_available("any")
    with pytest.raises(TypeError, match="is_available: backend must be a string"):
        tether.is_available(3)
