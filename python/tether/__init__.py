"""tether: collectives across machines (all-reduce, all-gather, broadcast, ...) from Python.

An mx.distributed-like API over the C library libtether, through ctypes:

    import numpy as np, tether
    world = tether.init()
    print(world.rank(), tether.all_sum(np.ones(10)))

Run it on 4 local ranks with ``tether launch -n 4 -- python3 script.py``; run alone it is a group
of size 1 and every collective is a copy. See docs/python.md.
"""

from ._lib import LibraryNotFoundError
from .collectives import (ANY, ANY_SOURCE, all_gather, all_max, all_min, all_prod, all_sum,
                          all_to_all, barrier, broadcast, recv, recv_like, reduce_scatter, send,
                          sum_scatter)
from .errors import TetherError
from .gradients import average_gradients
from .group import Group, init, is_available

__version__ = "0.1.0"

__all__ = [
    "ANY", "ANY_SOURCE", "Group", "LibraryNotFoundError", "TetherError", "all_gather",
    "all_max", "all_min", "all_prod", "all_sum", "all_to_all", "average_gradients", "barrier",
    "broadcast", "init", "is_available", "recv", "recv_like", "reduce_scatter", "send",
    "sum_scatter",
]
