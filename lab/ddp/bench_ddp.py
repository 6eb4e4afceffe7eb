"""lab/ddp - DDP training throughput of a small decoder-only transformer: tether vs gloo.

    PYTHONPATH=build/torch-ext /usr/bin/python3 lab/ddp/bench_ddp.py --tether build/tether

runs every configuration through `tether launch -n N` (N = 1, 2, 4 by default) and prints one
table: samples/s over all ranks and the speed-up over N = 1 of the same backend, as mccl's README
does. Weak scaling: each rank trains on its own batch of --batch sequences, so N ranks do N times
the work of one. "tether bf16" sets TETHER_WIRE_DTYPE=bf16 (float32 gradients travel as bfloat16).
Each rank uses --threads intra-op threads. Not a test.
"""
import argparse
import os
import re
import subprocess
import sys
import time

import torch
from torch import nn

CONFIGS = [("gloo", "gloo", {}), ("tether", "tether", {}),
           ("tether bf16", "tether", {"TETHER_WIRE_DTYPE": "bf16"})]


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Decoder(nn.Module):
    """GPT-style: token + position embeddings, causal self-attention blocks, tied output head."""

    def __init__(self, vocab, dim, layers, heads, seq):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, dim), nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x, self.mask)
        return self.ln(x) @ self.tok.weight.t()


def worker(args):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    if args.backend == "tether":
        import tether_torch  # noqa: F401
    torch.set_num_threads(args.threads)
    dist.init_process_group(backend=args.backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(Decoder(args.vocab, args.dim, args.layers, args.heads, args.seq))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    data = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        logits = model(data[:, :-1])
        loss = loss_fn(logits.reshape(-1, args.vocab), data[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    dist.barrier()
    elapsed = time.perf_counter() - start
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        print(f"RESULT params={params} samples_per_s={size * args.batch * args.steps / elapsed:.2f}",
              flush=True)
    dist.destroy_process_group()


def run(args, backend, env, n):
    cmd = [args.tether, "launch", "-n", str(n), "--", sys.executable, os.path.abspath(__file__),
           "--worker", "--backend", backend] + [f"--{k}={getattr(args, k)}" for k in SHAPE]
    out = subprocess.run(cmd, env=dict(os.environ, **env), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=1800)
    m = re.search(r"RESULT params=(\d+) samples_per_s=([0-9.]+)", out.stdout)
    if not m:
        sys.exit(f"bench_ddp: {backend} at N={n} failed:\n{out.stdout}")
    return int(m.group(1)), float(m.group(2))


SHAPE = ("vocab", "dim", "layers", "heads", "seq", "batch", "steps", "warmup", "threads")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tether", default="tether", help="the tether command (for launch)")
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--backend", default="tether", help=argparse.SUPPRESS)
    for name, default in (("vocab", 1024), ("dim", 128), ("layers", 2), ("heads", 4), ("seq", 64),
                          ("batch", 8), ("steps", 10), ("warmup", 2), ("threads", 1)):
        p.add_argument(f"--{name}", type=int, default=default)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    ranks = [int(n) for n in args.ranks.split(",")]
    print(f"decoder-only transformer: vocab {args.vocab}, dim {args.dim}, {args.layers} layers, "
          f"{args.heads} heads, seq {args.seq}, batch {args.batch} per rank, {args.threads} thread(s) "
          f"per rank, {args.steps} timed steps after {args.warmup}; {os.cpu_count()} CPUs")
    print(f"| config | N | samples/s | speed-up |\n|---|---|---|---|")
    for label, backend, env in CONFIGS:
        base = None
        for n in ranks:
            params, rate = run(args, backend, env, n)
            base = base or rate
            print(f"| {label} | {n} | {rate:.1f} | {rate / base:.2f}x |", flush=True)
    print(f"parameters: {params / 1e6:.2f} M")


if __name__ == "__main__":
    main()
