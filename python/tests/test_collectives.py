"""Every collective x every dtype against numpy's reduction of all ranks' inputs, at any size.

Run alone (size 1) or under `tether launch -n N -- /usr/bin/python3 -m pytest ...`.
"""

import array

import numpy as np
import pytest

import tether
from inputs import DTYPES, all_inputs, dtype_id, rank_input, reference

REDUCE_FUNCS = {"sum": tether.all_sum, "prod": tether.all_prod, "max": tether.all_max,
                "min": tether.all_min}
ROWS = 3  # rows of axis 0 per rank in the scatter-style calls


def world_inputs(world, shape, dtype, seed):
    return all_inputs(range(world.size()), shape, dtype, seed)


def is_complex(dtype):
    return np.dtype(dtype).kind == "c"


@pytest.mark.parametrize("op", list(REDUCE_FUNCS))
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_all_reduce(world, dtype, op):
    x = rank_input(world.rank(), (5, 2), dtype, seed=1)
    if is_complex(dtype) and op in ("max", "min"):
        with pytest.raises(tether.TetherError) as err:
            REDUCE_FUNCS[op](x)
        assert err.value.name == "TETHER_EINVAL" and "complex64" in err.value.detail
        return
    got = REDUCE_FUNCS[op](x)
    assert got.dtype == x.dtype and got.shape == x.shape
    np.testing.assert_array_equal(got, reference(world_inputs(world, (5, 2), dtype, 1), op))


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_all_gather(world, dtype):
    x = rank_input(world.rank(), (2, 3), dtype, seed=2)
    got = tether.all_gather(x)
    expected = np.concatenate(list(world_inputs(world, (2, 3), dtype, 2)))
    assert got.shape == (2 * world.size(), 3)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("op", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_reduce_scatter(world, dtype, op):
    shape = (ROWS * world.size(), 2)
    x = rank_input(world.rank(), shape, dtype, seed=3)
    if is_complex(dtype) and op in ("max", "min"):
        with pytest.raises(tether.TetherError, match="TETHER_EINVAL"):
            tether.reduce_scatter(x, op)
        return
    got = tether.reduce_scatter(x, op)
    full = reference(world_inputs(world, shape, dtype, 3), op)
    r = world.rank()
    np.testing.assert_array_equal(got, full[r * ROWS:(r + 1) * ROWS])


def test_sum_scatter_is_reduce_scatter_sum(world):
    shape = (ROWS * world.size(),)
    got = tether.sum_scatter(rank_input(world.rank(), shape, np.float32, seed=4))
    full = world_inputs(world, shape, np.float32, 4).sum(axis=0)
    np.testing.assert_array_equal(got, full[world.rank() * ROWS:(world.rank() + 1) * ROWS])


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_broadcast(world, dtype):
    root = world.size() - 1  # not 0, so a root argument that is ignored shows
    x = rank_input(world.rank(), (4,), dtype, seed=5)
    got = tether.broadcast(x, root)
    np.testing.assert_array_equal(got, rank_input(root, (4,), dtype, seed=5))
    np.testing.assert_array_equal(x, rank_input(world.rank(), (4,), dtype, seed=5))  # untouched


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_all_to_all(world, dtype):
    shape = (ROWS * world.size(), 2)
    got = tether.all_to_all(rank_input(world.rank(), shape, dtype, seed=6))
    r = world.rank()
    # Block i of the result is block r of rank i's input.
    expected = np.concatenate([rank_input(i, shape, dtype, seed=6)[r * ROWS:(r + 1) * ROWS]
                               for i in range(world.size())])
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
def test_send_recv_ring(world, dtype):
    """Each rank sends to the next and receives from the previous; even ranks send first so
    that a send that waits for its receiver cannot deadlock the ring."""
    n, r = world.size(), world.rank()
    if n == 1:
        pytest.skip("no peer in a group of size 1 (test_errors checks send to self)")
    nxt, prev = (r + 1) % n, (r - 1) % n
    x = rank_input(r, (3, 2), dtype, seed=7)
    if r % 2 == 0:
        tether.send(x, nxt)
        got = tether.recv((3, 2), dtype, prev)
    else:
        got = tether.recv_like(x, prev)
        tether.send(x, nxt)
    np.testing.assert_array_equal(got, rank_input(prev, (3, 2), dtype, seed=7))


def test_recv_any_source(world):
    """Every other rank sends rank 0 two arrays; rank 0 takes them with src=tether.ANY (recv,
    then recv_like): each comes with its sender, and each sender's come in the order sent."""
    n, r = world.size(), world.rank()
    if n == 1:
        pytest.skip("no peer in a group of size 1 (test_errors checks it is refused)")
    if r != 0:
        for k in range(2):
            tether.send(rank_input(r, (4,), np.float32, seed=8 + k), 0)
    else:
        seen = {s: 0 for s in range(1, n)}
        for i in range(2 * (n - 1)):
            if i % 2:
                got, src = tether.recv_like(np.zeros(4, np.float32), tether.ANY)
            else:
                got, src = tether.recv((4,), np.float32, src=tether.ANY)
            assert src in seen, src
            want = rank_input(src, (4,), np.float32, seed=8 + seen[src])
            np.testing.assert_array_equal(got, want)
            seen[src] += 1
        assert all(k == 2 for k in seen.values()), seen
    tether.barrier()


def test_barrier(world):
    tether.barrier()
    tether.barrier(group=world)


# Inputs of every kind the buffer protocol allows, and out=.

def expected_sum(world, shape, dtype, seed):
    return world_inputs(world, shape, dtype, seed).sum(axis=0).astype(dtype)


def test_non_contiguous_input_is_copied(world):
    x = rank_input(world.rank(), (4, 6), np.float64, seed=8)
    got = tether.all_sum(x[:, ::2])
    np.testing.assert_array_equal(got, expected_sum(world, (4, 6), np.float64, 8)[:, ::2])


def test_byte_swapped_input(world):
    x = rank_input(world.rank(), (5,), np.int32, seed=9)
    got = tether.all_sum(x.astype(">i4"))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected_sum(world, (5,), np.int32, 9))


def test_array_array_and_memoryview_inputs(world):
    x = rank_input(world.rank(), (6,), np.float32, seed=10)
    expected = expected_sum(world, (6,), np.float32, 10)
    np.testing.assert_array_equal(tether.all_sum(array.array("f", x.tolist())), expected)
    np.testing.assert_array_equal(tether.all_sum(memoryview(x.tobytes()).cast("f")), expected)


def test_out_in_place(world):
    x = rank_input(world.rank(), (7,), np.float32, seed=11)
    got = tether.all_sum(x, out=x)
    assert got is x or np.shares_memory(got, x)
    np.testing.assert_array_equal(x, expected_sum(world, (7,), np.float32, 11))


def test_out_into_array_array(world):
    buf = array.array("d", [0.0] * 4)
    tether.all_max(np.full(4, float(world.rank())), out=buf)
    assert list(buf) == [float(world.size() - 1)] * 4


def test_scalar_and_empty(world):
    assert tether.all_sum(np.float64(world.rank())).shape == ()
    assert tether.all_sum(np.float64(world.rank())) == sum(range(world.size()))
    assert tether.all_gather(np.int64(world.rank())).tolist() == list(range(world.size()))
    assert tether.all_sum(np.zeros((0, 3), np.float32)).shape == (0, 3)


def test_group_keyword(world):
    x = rank_input(world.rank(), (3,), np.int16, seed=12)
    np.testing.assert_array_equal(tether.all_sum(x, group=world),
                                  expected_sum(world, (3,), np.int16, 12))
