"""examples/all_sum.py - the getting-started example in Python: every rank adds its vector into
everyone's. Run: tether launch -n 4 -- python3 examples/all_sum.py   (alone: a group of size 1)
"""

import numpy as np

import tether

world = tether.init()
x = tether.all_sum(np.ones(10, np.float32) * (world.rank() + 1))
print(f"rank {world.rank()} of {world.size()} ({world.backend}): {x}")
