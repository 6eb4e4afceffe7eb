"""The world fixture shared by every test file.

The same tests run alone (a group of size 1) and under `tether launch -n N`, where every rank
runs this whole pytest session; pytest orders tests deterministically, so all ranks make the same
collective calls in the same order. TETHER_TEST_NRANKS, set by the ctest registration, is the
size the world must have: a launcher that silently formed size-1 groups would otherwise make
every test pass trivially.
"""

import os

import pytest

import tether


@pytest.fixture(scope="session")
def world():
    group = tether.init()
    expected = os.environ.get("TETHER_TEST_NRANKS")
    if expected is not None:
        assert group.size() == int(expected), (
            f"TETHER_TEST_NRANKS={expected} but init() formed a group of size {group.size()} "
            f"({group.backend})")
    return group
