"""Overhead of the Python layer: one 8-byte all_sum (a float64) through tether.all_sum, through a
bare ctypes call, and through the C API (examples/all_sum_latency), on the same ranks.

    /usr/bin/python3 python/bench/all_sum_overhead.py --build build [-n 2] [--rounds 3]

The driver alternates launches of the C program and of this script in worker mode, so machine
noise hits both alike, and prints the median of the rounds for each. Needs the build's tether
command, libtether and examples/all_sum_latency.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULT = re.compile(r"^(\w+) us_per_call=([0-9.]+)", re.M)


def worker(iterations):
    """Under the launcher: time each Python path; rank 0 prints one line per path."""
    import numpy as np

    import tether
    from tether import _dtypes, _lib
    from tether.collectives import ops

    world = tether.init()
    x = np.ones(1, np.float64)
    out = np.empty_like(x)
    lib = _lib.get()
    handle, ptr = world.handle, x.ctypes.data
    dtype, op = _dtypes.code_of(np.float64), ops()["sum"]

    def raw():  # the floor: one ctypes call with every argument prepared
        lib.tether_all_reduce(handle, ptr, ptr, 1, dtype, op)

    paths = {
        "ctypes_call": raw,
        "all_sum": lambda: tether.all_sum(x),
        "all_sum_out": lambda: tether.all_sum(x, out=out),
    }
    assert tether.all_sum(x)[0] == world.size()  # the paths do reduce
    for name, call in paths.items():
        for _ in range(iterations // 10 + 1):  # warm up
            call()
        tether.barrier()
        start = time.perf_counter()
        for _ in range(iterations):
            call()
        elapsed = time.perf_counter() - start
        if world.rank() == 0:
            print(f"{name} us_per_call={elapsed / iterations * 1e6:.3f}", flush=True)


def launch(build, n, argv):
    """Run argv on n local ranks with the build's launcher; returns {path: us_per_call}."""
    env = dict(os.environ, TETHER_LIBRARY=os.path.join(build, "libtether.so"),
               PYTHONPATH=os.path.join(HERE, ".."))
    proc = subprocess.run([os.path.join(build, "tether"), "launch", "-n", str(n), "--"] + argv,
                          capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return {name: float(us) for name, us in RESULT.findall(proc.stdout)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="CMake build folder (default: build)")
    parser.add_argument("-n", type=int, default=2, help="ranks (default: 2)")
    parser.add_argument("--rounds", type=int, default=3, help="launches of each (default: 3)")
    parser.add_argument("--iterations", type=int, default=5000, help="calls per timing")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.iterations)

    build = os.path.abspath(args.build)
    c_program = [os.path.join(build, "examples", "all_sum_latency"), str(args.iterations)]
    py_program = [sys.executable, os.path.abspath(__file__), "--worker",
                  "--iterations", str(args.iterations)]
    samples = {}
    for _ in range(args.rounds):
        for program in (c_program, py_program):
            for name, us in launch(build, args.n, program).items():
                samples.setdefault(name, []).append(us)
    c_us = statistics.median(samples["c_call"])
    print(f"8-byte all_sum, {args.n} ranks, median of {args.rounds} rounds x "
          f"{args.iterations} calls")
    print(f"{'path':<14}{'us/call':>10}{'vs C':>10}")
    for name in ("c_call", "ctypes_call", "all_sum_out", "all_sum"):
        us = statistics.median(samples[name])
        print(f"{name:<14}{us:>10.2f}{us - c_us:>+10.2f}")


if __name__ == "__main__":
    main()
