"""The stall test: `tether launch -n N` of stall_worker.py MODE; every rank that waits must raise
within LIMIT_S (5 heartbeats at the default TETHER_HEARTBEAT=1 s) with tether's error naming the
cycle (TETHER_EDEADLOCK) or the rank that swallowed its error (TETHER_EPEER).

Usage: stall_test.py TETHER_BIN MODE   (MODE: recv2, recv3 or swallow; stall_worker.py says what)
"""
import os
import re
import subprocess
import sys

LIMIT_S = 5.0
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stall_worker.py")
SIZES = {"recv2": 2, "recv3": 3, "swallow": 3}


def expected(mode):
    """{rank: the strings its error must hold} for the ranks that must raise."""
    if mode == "swallow":
        return {r: ["TETHER_EPEER", "rank 1 failed", "TETHER_EINVAL"] for r in (0, 2)}
    return {r: ["TETHER_EDEADLOCK", "deadlock: rank "] for r in range(SIZES[mode])}


def main():
    tether_bin, mode = sys.argv[1], sys.argv[2]
    # No TETHER_TIMEOUT: the heartbeats alone must end the wait (a timeout would hide a hang).
    env = {k: v for k, v in os.environ.items() if k != "TETHER_TIMEOUT"}
    run = subprocess.run([tether_bin, "launch", "-n", str(SIZES[mode]), "--", sys.executable,
                          WORKER, mode], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=120)
    print(run.stdout)
    raised = {int(m.group(1)): (float(m.group(2)), m.group(3)) for m in re.finditer(
        r"rank (\d+) raised ([0-9.]+) s after its call: (.*)", run.stdout)}
    failed = 0
    for r, needles in expected(mode).items():
        delay, message = raised.get(r, (None, ""))
        if delay is None:
            problem = "did not raise"
        elif delay > LIMIT_S:
            problem = f"raised after {delay:.2f} s, limit {LIMIT_S} s"
        elif not all(n in message for n in needles):
            problem = f"raised an error without {needles}: {message}"
        else:
            continue
        failed += 1
        print(f"FAIL: rank {r} {problem}")
    print(f"{len(expected(mode)) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
