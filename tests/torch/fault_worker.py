"""One rank of the kill test (run by fault_test.py under `tether launch`).

DDP training over tether; the last rank SIGKILLs itself in the middle of step KILL_STEP, after
writing the time to FAULT_DIR. Every other rank must raise from a tether call: it prints how long
after the kill that happened. Survivors ignore the launcher's SIGTERM (it stops the remaining
ranks when one dies, SIGKILL 3 s later) so that the raise, not the launcher, ends them.
TETHER_TEST_DEVICE (default cpu) is where the model and batches live.
"""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import tether_torch  # noqa: F401

STEPS, KILL_STEP = 50, 5


def main():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    dist.init_process_group(backend="tether")
    rank, size = dist.get_rank(), dist.get_world_size()
    victim = size - 1
    stamp = os.path.join(os.environ["FAULT_DIR"], "killed_at")
    torch.manual_seed(0)
    device = torch.device(os.environ.get("TETHER_TEST_DEVICE", "cpu"))
    net = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 8)).to(device),
              bucket_cap_mb=0.1)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    try:
        for step in range(STEPS):
            loss = net(torch.randn(16, 64, device=device)).square().mean()
            if rank == victim and step == KILL_STEP:
                with open(stamp, "w") as f:
                    f.write(repr(time.time()))
                os.kill(os.getpid(), signal.SIGKILL)
            opt.zero_grad()
            loss.backward()
            opt.step()
            dist.barrier()
    except RuntimeError as e:
        with open(stamp) as f:
            delay = time.time() - float(f.read())
        first_line = str(e).splitlines()[0]
        print(f"rank {rank} raised {delay:.2f} s after the kill: {first_line}", flush=True)
        os._exit(0)  # the group is broken: skip torch's teardown
    print(f"rank {rank} finished {STEPS} steps without an error", flush=True)
    sys.exit(1)


if __name__ == "__main__":
    main()
