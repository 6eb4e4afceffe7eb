"""Ranks that disagree on a collective's shape or dtype: TETHER_EMISMATCH on every rank within
TETHER_TIMEOUT, never a hang, and the group stays broken afterwards.

A mismatch breaks the world, so the ctest registration runs one kind per launch (`-k count`,
`-k dtype`), with N >= 2. The tests run in file order: the break, then the sticky check.
"""

import numpy as np
import pytest

import tether

# What rank r passes for each kind of disagreement; rank 0 differs from all the others, and with
# more than 2 ranks the others differ among themselves too (count).
KINDS = {
    "count": lambda r: np.ones(r + 1, np.float32),
    "dtype": lambda r: np.ones(4, np.float32 if r == 0 else np.int32),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_disagreement_raises_on_every_rank(world, kind):
    assert world.size() >= 2, "a mismatch needs two ranks: run under tether launch -n 2 or more"
    with pytest.raises(tether.TetherError) as err:
        tether.all_sum(KINDS[kind](world.rank()))
    assert err.value.name == "TETHER_EMISMATCH", str(err.value)


@pytest.mark.parametrize("kind", list(KINDS))
def test_group_stays_broken(world, kind):
    with pytest.raises(tether.TetherError) as err:
        tether.barrier()
    assert err.value.name == "TETHER_EMISMATCH"
