"""A torchrun job with backend="tether" prints no warning on any rank: the job token comes from
torch's store (rank 0 makes a random one), so no rank warns that TETHER_JOB_TOKEN is unset.

Starts N ranks with torchrun (python -m torch.distributed.run, no tether hostfile or token), each
running this file with --worker: init_process_group(backend="tether"), an all-reduce checked,
destroy. Exits 0 only if torchrun does, every rank reported its sum, and no line of the job's
output mentions a warning.

Usage: torchrun_quiet.py N
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from free_ports import free_ports  # noqa: E402

TIMEOUT_S = 240


def worker():
    import torch
    import torch.distributed as dist

    import tether_torch  # noqa: F401  registers backend "tether"

    dist.init_process_group(backend="tether")
    rank, size = dist.get_rank(), dist.get_world_size()
    x = torch.full((1000,), float(rank + 1))
    dist.all_reduce(x)
    want = size * (size + 1) / 2
    assert bool((x == want).all()), f"rank {rank}: sum {x[0].item()}, want {want}"
    print(f"torchrun_quiet: rank {rank} of {size}: sum {want:g}", flush=True)
    dist.destroy_process_group()


def main():
    n = int(sys.argv[1])
    port = free_ports(1)[0]  # for torch's store
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TETHER_") or k == "TETHER_TIMEOUT"}
    env["OMP_NUM_THREADS"] = "1"  # else torchrun itself warns that it sets it
    # --redirects 2 --tee 2: the ranks' stderr to the console still, through a log file. Debian's
    # torchrun of PyTorch 1.13 on Python 3.11 fails at start with the default "0" (Std("0") is None
    # there: 3.11 no longer iterates a flag's zero member); "2" parses.
    cmd = [sys.executable, "-m", "torch.distributed.run", "--redirects", "2", "--tee", "2",
           "--nnodes", "1", "--nproc_per_node", str(n), "--master_addr", "127.0.0.1",
           "--master_port", str(port), os.path.abspath(__file__), "--worker"]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=TIMEOUT_S)
    print(p.stdout)
    bad = []
    if p.returncode != 0:
        bad.append(f"torchrun exited {p.returncode}")
    # torchrun's tee may glue the ranks' lines together: find the reports anywhere
    sums = set(re.findall(r"torchrun_quiet: rank (\d+) of", p.stdout))
    if len(sums) != n:
        bad.append(f"{len(sums)} of {n} ranks reported their sum")
    warned = [line for line in p.stdout.splitlines() if "warn" in line.lower()]
    if warned:
        bad.append("warnings:\n  " + "\n  ".join(warned))
    for b in bad:
        print("FAIL: " + b, file=sys.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    worker() if sys.argv[1:] == ["--worker"] else main()
