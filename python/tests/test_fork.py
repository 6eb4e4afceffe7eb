"""A forked child leaves its parent's groups alone: its calls on them fail naming the fork, and
closing them there (or their finalizers at its exit) keeps the parent's connections open."""

import os

import numpy as np

import tether


def child_run(world, half, single):
    """In the forked child: 0 if every check passed, else 1 (printed)."""
    try:
        tether.all_sum(np.ones(2), group=single)  # size 1: before the fix, a local copy
        print("child: all_sum on an inherited group did not fail")
        return 1
    except tether.TetherError as err:
        if err.name != "TETHER_EINVAL" or "fork" not in err.detail:
            print(f"child: all_sum on an inherited group: {err}")
            return 1
    for group in (single, half, world):
        group.close()
    return 0


def test_forked_child_closes_inherited_groups(world):
    half = world.split(0)
    single = world.split(world.rank())
    if world.rank() == world.size() - 1:
        pid = os.fork()
        if pid == 0:  # never return into pytest in the child
            status = 1
            try:
                status = child_run(world, half, single)
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child status {status:#x}"
    for group in (world, half):
        got = tether.all_sum(np.full(3, world.rank() + 1, np.int64), group=group)
        assert got.tolist() == [world.size() * (world.size() + 1) // 2] * 3
    single.close()
    half.close()
