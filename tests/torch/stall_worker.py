"""One rank of the stall test (run by stall_test.py under `tether launch`): live ranks that can
never go on, which tether's heartbeats must tell apart from slow ones (core/waitstate.h).

  recv2    N = 2: rank 0 receives from rank 1 (tag 7) while rank 1 receives from rank 0 (tag 3).
  recv3    N = 3: rank r receives from rank (r + 1) % 3.
  swallow  N = 3: rank 1 makes a call tether refuses before anything moves (all_to_all_single with
           one tensor as input and output: not in place, TETHER_EINVAL), catches the error and
           sleeps SWALLOW_S; ranks 0 and 2 wait for it in all_reduce.
Every rank that waits must raise: it prints how long after its call that happened and the first
line of the error; one still waiting after WATCHDOG_S is ended with its stack (a hang). Ranks
ignore the launcher's SIGTERM (sent when one exits) so that the raise, not the launcher, ends them.
Why swallow uses all_to_all_single: the binding checks every argument torch can get wrong before
tether sees it (bindings/torch/csrc/args.h); an in-place all-to-all is one only tether refuses.
"""
import faulthandler
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

import tether_torch  # noqa: F401

SWALLOW_S = 7  # stall_test.py's LIMIT_S and 2 s: the others raised by then, or failed
WATCHDOG_S = 30  # a rank still waiting then is stuck: end it with its stack


def stalled_call(mode, rank):
    t = torch.ones(3)  # all_to_all_single splits it into one element per rank
    if mode == "recv2":
        dist.recv(t, src=1 - rank, tag=7 if rank == 0 else 3)
    elif mode == "recv3":
        dist.recv(t, src=(rank + 1) % 3, tag=rank)
    elif mode == "swallow" and rank == 1:
        try:
            dist.all_to_all_single(t, t)
        except RuntimeError as e:
            print(f"rank {rank} swallowed: {str(e).splitlines()[0]}", flush=True)
        time.sleep(SWALLOW_S)
    elif mode == "swallow":
        dist.all_reduce(t)
    else:
        sys.exit(f"stall_worker.py: unknown mode {mode!r}; expected recv2, recv3 or swallow")


def main():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    mode = sys.argv[1]
    dist.init_process_group(backend="tether")
    rank = dist.get_rank()
    dist.barrier()  # every rank is up: the clock starts at the stalled call
    start = time.monotonic()
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True)
    try:
        stalled_call(mode, rank)
    except RuntimeError as e:
        print(f"rank {rank} raised {time.monotonic() - start:.2f} s after its call: "
              f"{str(e).splitlines()[0]}", flush=True)
    else:
        print(f"rank {rank} returned after {time.monotonic() - start:.2f} s", flush=True)
    os._exit(0)  # the group is broken: skip torch's teardown


if __name__ == "__main__":
    main()
