"""Create, use and destroy tether process groups CYCLES times while works are still queued, their
tensors and Work objects already dropped by Python, and a Python callback chained on a future.

The group's destructor runs on this (Python) thread with the GIL held; the progress thread must
finish the queued works without ever needing the GIL (dropping a tensor whose Python object C++
owns takes it), and callbacks that do need it must get it: a deadlock here hangs, which
faulthandler turns into a failure with every thread's stack.

Usage (every rank): teardown_worker.py [CYCLES]
"""
import datetime
import faulthandler
import os
import sys

import torch

import tether_torch

HANG_S = 120


def cycle(rank, size, i):
    pg = tether_torch._C.create_process_group(rank, size, datetime.timedelta(seconds=60))
    checked = torch.full((64,), float(rank + 1))
    first = pg.allreduce([checked])
    seen = []
    # Runs on the progress thread and needs the GIL while the destructor below holds it.
    first.get_future().then(lambda f: seen.append(f.value()[0].sum().item()))
    for _ in range(8):  # outstanding at destruction; Python keeps neither tensor nor Work
        pg.allreduce([torch.ones(1 << 16) * i])
    barrier = pg.barrier()
    del barrier
    del pg  # joins the progress thread: every queued work runs first
    want = 64.0 * size * (size + 1) / 2
    if not first.is_completed() or checked[0].item() != size * (size + 1) / 2 or seen != [want]:
        raise SystemExit(f"rank {rank} cycle {i}: works not done at destruction "
                         f"(completed {first.is_completed()}, value {checked[0].item()}, "
                         f"callback saw {seen})")


def main():
    cycles = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    # The tensors are tiny: OpenMP teams of every core per rank only oversubscribe the machine
    # (seen: 300 cycles past 120 s on 16 cores with other tests running).
    torch.set_num_threads(1)
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    for i in range(cycles):
        cycle(rank, size, i)
    faulthandler.cancel_dump_traceback_later()
    print(f"rank {rank}: {cycles} create/use/destroy cycles with outstanding works")


if __name__ == "__main__":
    main()
