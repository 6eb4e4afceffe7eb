"""Group.split: membership, order by key, collectives inside the child, parent unaffected."""

import numpy as np

import tether
from inputs import all_inputs, rank_input


def test_split_by_parity(world):
    color = world.rank() % 2
    members = [r for r in range(world.size()) if r % 2 == color]
    with world.split(color) as child:
        assert (child.rank(), child.size()) == (members.index(world.rank()), len(members))
        assert child.backend == world.backend
        got = tether.all_sum(rank_input(world.rank(), (4,), np.int32, seed=20), group=child)
        np.testing.assert_array_equal(got, all_inputs(members, (4,), np.int32, 20).sum(axis=0))
    # The parent still works once the child is freed.
    got = tether.all_max(rank_input(world.rank(), (4,), np.float32, seed=21))
    np.testing.assert_array_equal(got, all_inputs(range(world.size()), (4,), np.float32,
                                                  21).max(axis=0))


def test_split_key_reverses_order(world):
    child = world.split(7, key=world.size() - world.rank())
    assert child.size() == world.size()
    assert child.rank() == world.size() - 1 - world.rank()
    got = tether.all_gather(np.array([world.rank()]), group=child)
    assert got.tolist() == list(reversed(range(world.size())))
    child.close()


def test_nested_split_and_default_group_untouched(world):
    half = world.split(world.rank() < (world.size() + 1) // 2)
    single = half.split(half.rank())
    assert single.size() == 1 and single.rank() == 0
    x = rank_input(world.rank(), (3,), np.float64, seed=22)
    np.testing.assert_array_equal(tether.all_sum(x, group=single), x)
    assert tether.init() is world  # init() keeps returning the first group
    single.close()
    half.close()


def test_negative_color_joins_no_group(world):
    # Every rank out: None everywhere (it was a Group of rank -1 and size 0).
    assert world.split(-1) is None
    # Rank 0 out, the others together.
    child = world.split(-1 if world.rank() == 0 else 5)
    if world.rank() == 0:
        assert child is None
    else:
        assert (child.rank(), child.size()) == (world.rank() - 1, world.size() - 1)
        assert tether.all_sum(np.ones(1), group=child).tolist() == [world.size() - 1]
        child.close()
    assert tether.all_sum(np.ones(1)).tolist() == [world.size()]
