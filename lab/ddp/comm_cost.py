"""lab/ddp/comm_cost.py - what DDP's gradient synchronisation costs per step, tether vs gloo.

    PYTHONPATH=build/torch-ext build/tether launch -n 2 -- /usr/bin/python3 lab/ddp/comm_cost.py

Where compute dominates (a 23 M-parameter decoder on a few CPU cores), samples/s hides the
backend; this measures it directly: per step, the time of a training step with gradient
synchronisation minus the time of the same step under DDP's no_sync() (same batches, same model),
for gloo and tether alternating in one run, --rounds rounds. Before each measurement rank 0 waits
(at most --settle seconds) for the load average to fall under --load and prints what it was.
--device cuda puts the model on the GPU (both backends stage CUDA tensors through host memory).
Rank 0 prints one line per round and backend, then the medians and their ratio. Not a test.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_ddp import Decoder  # noqa: E402

import tether_torch  # noqa: E402,F401


def settle(limit, most_s):
    """Rank 0: wait until the 1-minute load average is under limit (at most most_s); return it."""
    deadline = time.monotonic() + most_s
    while os.getloadavg()[0] >= limit and time.monotonic() < deadline:
        time.sleep(2)
    return os.getloadavg()[0]


def measure(args, group, device, rank):
    """Seconds per step with gradient sync and under no_sync(), on the same batches."""
    torch.manual_seed(0)
    net = DDP(Decoder(args.vocab, args.dim, args.layers, args.heads, args.seq).to(device),
              process_group=group)
    opt = torch.optim.SGD(net.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(rank)
    batches = [torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g).to(device)
               for _ in range(args.steps)]
    loss_fn = nn.CrossEntropyLoss()

    def step(x):
        logits = net(x[:, :-1])
        loss = loss_fn(logits.reshape(-1, args.vocab), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()

    def timed(sync):
        dist.barrier(group=args.neutral)
        start = time.perf_counter()
        for x in batches:
            if sync:
                step(x)
            else:
                with net.no_sync():
                    step(x)
        return (time.perf_counter() - start) / len(batches)

    for x in batches[:args.warmup]:
        step(x)
    with_sync, without = timed(True), timed(False)
    params = sum(p.numel() for p in net.parameters())
    return with_sync, without, params


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--load", type=float, default=0.5, help="load average to wait for")
    p.add_argument("--settle", type=float, default=120, help="longest wait for it, seconds")
    for name, default in (("vocab", 8192), ("dim", 512), ("layers", 6), ("heads", 8), ("seq", 64),
                          ("batch", 2), ("steps", 8), ("warmup", 2), ("threads", 1)):
        p.add_argument(f"--{name}", type=int, default=default)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dist.init_process_group(backend="tether")
    rank, size = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    args.neutral = gloo  # barriers and the load hand-off go through gloo for both backends
    costs = {"gloo": [], "tether": []}
    for r in range(args.rounds):
        for name, group in (("gloo", gloo), ("tether", None)):
            load = torch.tensor([settle(args.load, args.settle) if rank == 0 else 0.0])
            dist.broadcast(load, 0, group=gloo)
            with_sync, without, params = measure(args, group, device, rank)
            costs[name].append(with_sync - without)
            if rank == 0:
                print(f"round {r + 1} {name:6s}: load {load.item():.2f}, step {with_sync * 1e3:.1f} ms "
                      f"with sync, {without * 1e3:.1f} ms under no_sync: communication "
                      f"{(with_sync - without) * 1e3:.1f} ms/step", flush=True)
    if rank == 0:
        g, t = (statistics.median(costs[k]) for k in ("gloo", "tether"))
        print(f"RESULT N={size} device={device.type} params={params / 1e6:.1f}M "
              f"gloo={g * 1e3:.1f}ms tether={t * 1e3:.1f}ms per step; tether/gloo={t / g:.2f}",
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
