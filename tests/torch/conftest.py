"""The process group every torch test file shares.

Every rank of `tether launch -n N` runs the same pytest session; pytest orders tests the same way
everywhere, so all ranks make the same collective calls in the same order. TETHER_TEST_NRANKS is
the world size the ctest registration expects: a launcher that silently gave size-1 groups would
otherwise make every test pass.
"""
import os

import pytest
import torch.distributed as dist

import tether_torch  # noqa: F401  registers backend "tether"


@pytest.fixture(scope="session")
def world():
    dist.init_process_group(backend="tether")
    rank, size = dist.get_rank(), dist.get_world_size()
    expected = os.environ.get("TETHER_TEST_NRANKS")
    if expected is not None:
        assert size == int(expected), f"TETHER_TEST_NRANKS={expected} but the world has {size} ranks"
    yield rank, size
    dist.destroy_process_group()
