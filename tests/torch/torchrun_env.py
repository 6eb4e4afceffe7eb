"""Start N ranks the way torchrun does (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE; no tether
hostfile) and run ARGS in each; exit 0 only if every rank does. Tests the store rendezvous.

Usage: torchrun_env.py N ARGS...
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from free_ports import free_ports  # noqa: E402

TIMEOUT_S = 240


def main():
    n, args = int(sys.argv[1]), sys.argv[2:]
    port = free_ports(1)[0]  # for torch's store
    env = {k: v for k, v in os.environ.items() if not k.startswith("TETHER_") or k in (
        "TETHER_TIMEOUT", "TETHER_TEST_NRANKS")}
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(n))
    ranks = [subprocess.Popen(args, env=dict(env, RANK=str(r))) for r in range(n)]
    status = 0
    for r, p in enumerate(ranks):
        try:
            rc = p.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = "timeout"
        if rc != 0:
            print(f"torchrun_env: rank {r} ended with {rc}", file=sys.stderr)
            status = 1
    for p in ranks:  # after a failure, the others may be waiting on it
        if p.poll() is None:
            p.kill()
    sys.exit(status)


if __name__ == "__main__":
    main()
