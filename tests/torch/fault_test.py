"""The kill test: `tether launch -n N` of fault_worker.py; every rank but the killed one must
raise within LIMIT seconds of the kill, with an error from tether.

Usage: fault_test.py TETHER_BIN N
"""
import os
import re
import subprocess
import sys
import tempfile

LIMIT_S = 5.0
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fault_worker.py")


def main():
    tether_bin, n = sys.argv[1], int(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, FAULT_DIR=tmp)
        run = subprocess.run([tether_bin, "launch", "-n", str(n), "--", sys.executable, WORKER],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=120)
    print(run.stdout)
    raised = {int(m.group(1)): (float(m.group(2)), m.group(3)) for m in re.finditer(
        r"rank (\d+) raised ([0-9.]+) s after the kill: (.*)", run.stdout)}
    failed = 0
    for r in range(n - 1):  # the survivors
        delay, message = raised.get(r, (None, ""))
        if delay is None:
            problem = "did not raise (no error, or stopped by the launcher first)"
        elif delay > LIMIT_S:
            problem = f"raised after {delay:.2f} s, limit {LIMIT_S} s"
        elif "tether" not in message:
            problem = f"raised an error that does not come from tether: {message}"
        else:
            continue
        failed += 1
        print(f"FAIL: rank {r} {problem}")
    print(f"{n - 1 - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
