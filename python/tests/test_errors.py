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
