"""PyTorch's own distributed suite (DistributedTest._DistTestBase, as test_distributed_spawn.py runs
it) over one backend, each test's outcome written as JSON; or, with --compare, over gloo and tether
one after the other, asserting that every test that passes on gloo passes on tether, except the
exclusions written in dist_suite_exclusions.txt (each with its reason; docs/torch.md lists them).

    dist_suite.py --compare [--world-size 2] [--gates-as-gloo] [--gloo-from FILE] [-k SUBSTRING]...
    dist_suite.py --backend gloo [--world-size 2] --save FILE [-k SUBSTRING]...

--save writes the backend's outcomes to FILE; --gloo-from takes gloo's outcomes from such a file
instead of running gloo again (ctest: torch.suite2_gloo runs gloo once for torch.suite2 and
torch.suite2_gates; gloo's run is the same with or without --gates-as-gloo, its gates being
gloo's own).

--gates-as-gloo evaluates the suite's backend-name gates (decorators that skip a test unless the
backend is named gloo, nccl, ...) as for gloo, while the tests run on the backend under test: the
test module is imported with BACKEND=gloo and then pointed at the real one. A test-only switch to
see what those gates hide. Needs torch, tether_torch on PYTHONPATH, and tests/torch/stubs
(expecttest) which this script adds itself.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "stubs"))

# In a worker (and in every process the suite spawns, which imports this file again): the module
# under test, imported with the gates' backend, then pointed at the backend that runs.
if os.environ.get("TETHER_SUITE_BACKEND"):
    os.environ["BACKEND"] = os.environ.get("TETHER_SUITE_GATES", os.environ["TETHER_SUITE_BACKEND"])
    import torch  # noqa: F401
    import tether_torch  # noqa: F401  registers "tether" in every process
    from torch.testing._internal.distributed import distributed_test as dt

    dt.BACKEND = os.environ["BACKEND"] = os.environ["TETHER_SUITE_BACKEND"]

    class TestDistBackendForked(dt.TestDistBackend, dt.DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            # Forked, not spawned as test_distributed_spawn.py does: a spawned rank imports torch
            # and the suite again, about 2 s a test here, and the suite has 270.
            self._start_processes(torch.multiprocessing.get_context("fork").Process)
            TestDistBackendForked.ranks_started.add(len(self.processes))

    # How many ranks each test really started: the proof that --world-size reached the suite.
    TestDistBackendForked.ranks_started = set()


def outcomes(result, names):
    """Each test's outcome by name: passed, failed, error or skipped."""
    found = dict.fromkeys(names, "passed")
    for what, items in (("failed", result.failures), ("error", result.errors),
                        ("skipped", result.skipped), ("skipped", result.expectedFailures)):
        for test, _ in items:
            found[test.id().rsplit(".", 1)[-1]] = what
    for test in result.unexpectedSuccesses:
        found[test.id().rsplit(".", 1)[-1]] = "failed"
    return found


def worker(out, patterns):
    loader = unittest.TestLoader()
    names = [n for n in loader.getTestCaseNames(TestDistBackendForked)
             if not patterns or any(p in n for p in patterns)]
    suite = unittest.TestSuite(TestDistBackendForked(n) for n in names)
    result = unittest.TextTestRunner(verbosity=1, stream=sys.stderr).run(suite)
    reasons = {}
    for _, reason in result.skipped:
        reasons[reason] = reasons.get(reason, 0) + 1
    with open(out, "w") as f:
        json.dump({"outcomes": outcomes(result, names),
                   "ranks": sorted(TestDistBackendForked.ranks_started), "skips": reasons}, f,
                  indent=0, sort_keys=True)


def run_backend(backend, args, patterns):
    """One backend's outcomes, from a worker process of this script."""
    with tempfile.TemporaryDirectory() as tmp:
        for d in ("barrier", "test_dir", "init_dir"):
            os.mkdir(os.path.join(tmp, d))
        out = os.path.join(tmp, "outcomes.json")
        env = dict(os.environ, TETHER_SUITE_BACKEND=backend, WORLD_SIZE=str(args.world_size),
                   TEMP_DIR=tmp)
        # The suite skips every test where torch sees fewer GPUs than ranks; its tensors are CPU
        # tensors either way.
        env["CUDA_VISIBLE_DEVICES"] = ""
        env.pop("TETHER_SUITE_GATES", None)
        if args.gates_as_gloo:
            env["TETHER_SUITE_GATES"] = "gloo"
        start = time.time()
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", out] + [
            a for p in patterns for a in ("-k", p)]
        subprocess.run(cmd, env=env, check=False, timeout=args.timeout)
        with open(out) as f:
            found = json.load(f)
    outcomes, ranks = found["outcomes"], found["ranks"]
    # Why tests were skipped, most common first: e.g. torch 2.x skips the suite's subgroup tests
    # below world size 8 (skip_if_small_worldsize), 1.13 below 3.
    for reason, count in sorted(found["skips"].items(), key=lambda kv: -kv[1])[:8]:
        print(f"dist_suite: {backend}: skipped {count}: {reason}")
    print(f"dist_suite: {backend}: {sum(v == 'passed' for v in outcomes.values())} passed, "
          f"{sum(v in ('failed', 'error') for v in outcomes.values())} failed, "
          f"{sum(v == 'skipped' for v in outcomes.values())} skipped in {time.time() - start:.0f} s; "
          f"ranks per test: {ranks}", flush=True)
    if ranks and ranks != [args.world_size]:
        sys.exit(f"dist_suite: {backend}: the tests started {ranks} ranks, not --world-size "
                 f"{args.world_size}")
    return outcomes


def exclusions():
    """Test name -> reason, from dist_suite_exclusions.txt (name, whitespace, reason)."""
    found = {}
    with open(os.path.join(HERE, "dist_suite_exclusions.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                name, _, reason = line.partition(" ")
                found[name] = reason.strip()
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", metavar="OUT", help=argparse.SUPPRESS)
    p.add_argument("--backend", default="tether")
    p.add_argument("--compare", action="store_true", help="gloo, then tether, then compare")
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--gates-as-gloo", action="store_true")
    p.add_argument("-k", action="append", default=[], help="run tests whose name holds this")
    p.add_argument("--timeout", type=int, default=3600, help="seconds per backend")
    p.add_argument("--save", metavar="FILE", help="write the outcomes (without --compare)")
    p.add_argument("--gloo-from", metavar="FILE", help="gloo's outcomes, from --save")
    args = p.parse_args()
    if args.worker:
        return worker(args.worker, args.k)
    if not args.compare:
        if args.save and os.path.exists(args.save):
            os.remove(args.save)  # no stale outcomes if this run fails
        found = run_backend(args.backend, args, args.k)
        if args.save:
            with open(args.save + ".tmp", "w") as f:
                json.dump({"backend": args.backend, "world_size": args.world_size,
                           "k": args.k, "outcomes": found}, f, indent=0, sort_keys=True)
            os.replace(args.save + ".tmp", args.save)
        return
    if args.gloo_from:
        with open(args.gloo_from) as f:
            saved = json.load(f)
        if [saved["backend"], saved["world_size"], saved["k"]] != ["gloo", args.world_size, args.k]:
            sys.exit(f"dist_suite: {args.gloo_from} holds {saved['backend']} at world size "
                     f"{saved['world_size']} with -k {saved['k']}, not gloo at "
                     f"{args.world_size} with -k {args.k}")
        gloo = saved["outcomes"]
        print(f"dist_suite: gloo: {sum(v == 'passed' for v in gloo.values())} passed "
              f"(from {args.gloo_from})", flush=True)
    else:
        gloo = run_backend("gloo", args, args.k)
    tether = run_backend("tether", args, args.k)
    excluded = exclusions()
    # Without --gates-as-gloo, a test the suite skips for tether by its backend-name gates cannot
    # pass: it is counted apart, not as missing.
    gated = sorted(n for n, v in gloo.items() if v == "passed" and tether.get(n) == "skipped"
                   and not args.gates_as_gloo)
    missing = sorted(n for n, v in gloo.items()
                     if v == "passed" and tether.get(n) != "passed" and n not in gated)
    unexplained = [n for n in missing if n not in excluded]
    for n in missing:
        print(f"dist_suite: passes on gloo, not on tether ({tether.get(n)}): {n}"
              + (f"  [excluded: {excluded[n]}]" if n in excluded else ""))
    print(f"dist_suite: world size {args.world_size}{', gates as gloo' if args.gates_as_gloo else ''}: "
          f"gloo passed {sum(v == 'passed' for v in gloo.values())}, tether passed "
          f"{sum(v == 'passed' for v in tether.values())}; of gloo's passes {len(gated)} skipped "
          f"for tether by name gates, {len(missing)} missing on tether, {len(unexplained)} of them "
          f"not excluded")
    sys.exit(1 if unexplained else 0)


if __name__ == "__main__":
    main()
