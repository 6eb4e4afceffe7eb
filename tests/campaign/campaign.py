#!/usr/bin/env python3
"""tests/campaign/campaign.py - randomised fault campaign: many short jobs, each with a backend,
size, collective, dtype, byte count, loss, jitter and sometimes a rank kill drawn from its own
seed; every rank's result checked element by element (tests/campaign/campaign_rank.c).

  campaign.py [--build DIR] [--runs R] [--seconds S] [--n N] [--max-bytes B] [--campaign-seed C]
  campaign.py --seed S            run the one run of seed S again, saying what it draws
  campaign.py --seed S --seed T --repeat K   each of those runs K times (runs that failed once)

Each run prints one line with its seed; a run that fails prints why, where its ranks' output is,
and the command that repeats it. The summary counts runs, wrong results, failed runs by category
(backend, collective, error), kills and the slowest survivor's failure after a kill (each must
fail within 5 s). Exit status 1 if any run had a wrong result, failed without a kill, or had a
survivor that did not fail within 5 s of the kill.

Backends: rdma-uc, rdma-rc (the verbs emulator, tests/softverbs, full mesh of devices),
rdma-uc-ring, rdma-rc-ring (devices to the two neighbours only: the rest forwarded), ring-k1,
ring-k2 (1 or 2 links per neighbour), mesh-a1, mesh-a2 (1 or 2 addresses per host, 127.0.0.1 and
127.0.0.2, so 1 or 2 links per pair), all on loopback. Loss (0 to 2 % of frames, bursts of 1 to 3) and jitter are the
emulator's (SOFTVERBS_LOSS, _LOSS_BURST, _JITTER_US, docs/rdma.md).

Loss is drawn on every rdma backend, UC too (tether resends lost UC frames: backends/rdma/
retransmit.c); CAMPAIGN_UC_LOSS=0 keeps UC loss-free. Cable deaths (CAMPAIGN_CABLES): a cable dies or flaps mid-run, in 3 runs in 10 of the backends
with two cables per pair: rdma with 2 devices per pair, one device down for good or for 0.5-2 s
(SOFTVERBS_DEVICE_DOWN); ring-k2 and mesh-a2 as 2 hosts in network namespaces joined by 2 veth
links (lab/netns, needs root), one taken down for good or flapped.
  CAMPAIGN_CABLES=survived  (the default) every backend that fails over (rdma, ring-k2, mesh-a2: the
                            mesh opens one link per cable a pair shares): such a run must pass
                            like any other
  CAMPAIGN_CABLES=all       the same (1 too): every backend with two cables per pair fails over
  CAMPAIGN_CABLES=0         none
"""
import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

BACKENDS = ["rdma-uc", "rdma-rc", "rdma-uc-ring", "rdma-rc-ring", "ring-k1", "ring-k2", "mesh-a1",
            "mesh-a2"]
COLLECTIVES = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "p2p"]
DTYPES = {"int8": 1, "uint8": 1, "int32": 4, "int64": 8, "uint64": 8, "float32": 4, "float64": 8}
KILL_LIMIT_MS = 5000
# The backends that fail over to another cable and go on (rdma: failover.c; the ring's and the
# mesh's 2 links per pair: backends/tcp/engine_lane.c).
SURVIVED = ["rdma-uc", "rdma-rc", "rdma-uc-ring", "rdma-rc-ring", "ring-k2", "mesh-a2"]
# Rank i reaches rank j on rdma_en<j> (and, with 2 cables, rdma_en<j+8>); its GID carries the rank.
RDMA_DEVICES = ",".join("rdma_en%d:10.%d.%%r.1" % (j, j) for j in range(16))


def cables_drawn(backend):
    """Whether CAMPAIGN_CABLES lets a run of this backend draw a cable death."""
    mode = os.environ.get("CAMPAIGN_CABLES", "survived")
    if mode not in ("0", "survived", "all", "1"):
        sys.exit("CAMPAIGN_CABLES=%s: say 0, survived or all" % mode)
    if not (mode in ("all", "1") or (mode == "survived" and backend in SURVIVED)):
        return False
    return backend.startswith("rdma") or netns_here()


NETNS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../lab/netns")
_netns_here = []


def netns_here():
    """Whether this machine can make the network namespaces a TCP cable run needs (root, ip netns):
    where it cannot, TCP runs draw no cable death (their seeds then draw differently)."""
    if not _netns_here:
        _netns_here.append(subprocess.call([NETNS, "check"], stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL) == 0)
    return _netns_here[0]


def draw(seed, args):
    """Everything a run does, from its seed alone."""
    rng = random.Random(seed)
    run = {"seed": seed, "backend": rng.choice(BACKENDS), "n": args.n or rng.randint(2, 8),
           "collective": rng.choice(COLLECTIVES), "dtype": rng.choice(sorted(DTYPES))}
    run["bytes"] = max(8, int(2 ** rng.uniform(3, args.max_bytes.bit_length() - 1)))
    run["loss"] = run["burst"] = run["jitter_us"] = 0
    rdma = run["backend"].startswith("rdma")
    if rdma and (run["backend"].startswith("rdma-rc") or os.environ.get("CAMPAIGN_UC_LOSS", "1") != "0"):
        if rng.random() < 0.5:
            run["loss"] = round(rng.uniform(0, 0.02), 4)
            run["burst"] = rng.randint(1, 3)
    if rdma and rng.random() < 0.3:
        run["jitter_us"] = rng.randint(1, 300)
    run["cable"] = None
    two = rdma or run["backend"] in ("ring-k2", "mesh-a2")
    if two and cables_drawn(run["backend"]) and rng.random() < 0.3:
        at = round(rng.uniform(0.2, 2), 2)
        up = round(at + rng.uniform(0.5, 2), 2) if rng.random() < 0.5 else None
        if not rdma:
            run["n"] = 2  # a pair of hosts and its two links: the case of the issue
        rank, other = rng.randrange(run["n"]), rng.randrange(run["n"] - 1)
        peer = other + (other >= rank)
        if run["backend"].endswith("-ring"):  # a neighbour's
            peer = (rank + (1 if other % 2 else -1)) % run["n"]
        # rdma: the first of the two devices by which rank reaches peer (rdma_en<peer>)
        run["cable"] = {"rank": rank, "device": peer, "at": at, "up": up}
    run["kill"] = None
    if rng.random() < args.kill_prob:
        run["kill"] = {"rank": rng.randrange(run["n"]), "ms": rng.randint(20, 2000)}
    if run["cable"] and not rdma:
        run["kill"] = None  # lab/netns stops both ranks at the first failure: nothing to judge
    return run


def run_ms(run):
    """A cable run goes on until 1 s after its cable's last change, so that a call meets it."""
    c = run["cable"]
    return str(int(((c["up"] or c["at"]) + 1) * 1000)) if c else None


def describe(run):
    extra = ""
    if run["loss"]:
        extra += " loss=%g%% burst=%d" % (run["loss"] * 100, run["burst"])
    if run["jitter_us"]:
        extra += " jitter=%dus" % run["jitter_us"]
    if run["cable"]:
        c = run["cable"]
        rdma = run["backend"].startswith("rdma")
        where = "rank%d/dev%d" % (c["rank"], c["device"]) if rdma else "link1"
        extra += " cable=%s@%gs%s" % (where, c["at"], "-%gs" % c["up"] if c["up"] else "")
    if run["kill"]:
        extra += " kill=rank%d@%dms" % (run["kill"]["rank"], run["kill"]["ms"])
    return "seed=%d %s n=%d %s %s %dB%s" % (run["seed"], run["backend"], run["n"],
                                           run["collective"], run["dtype"], run["bytes"], extra)


def free_ports(addrs):
    """A free port on each address, all different, below Linux's ephemeral range (32768 up), so no
    outgoing connection of another program takes one between now and the ranks' bind. Every socket
    stays bound until all are chosen, so no port is handed out twice."""
    held, pick = [], random.SystemRandom()
    for a in addrs:
        while True:
            s = socket.socket()
            try:
                s.bind((a, pick.randrange(20000, 32768)))
                break
            except OSError:
                s.close()
        held.append(s)
    ports = [s.getsockname()[1] for s in held]
    for s in held:
        s.close()
    return ports


def port_taken(path):
    """Did this rank fail to bind its port? Another program took it after free_ports: not the
    run's fault, so it is started again with other ports."""
    line = last_line(path)
    return line.startswith("FAILED tether_init") and "already in use" in line


def rank_envs(run, work, args):
    """The environment of each rank."""
    n, backend = run["n"], run["backend"]
    base = dict(os.environ, TETHER_SIZE=str(n), TETHER_JOB_TOKEN="campaign-%d" % run["seed"])
    for k in ("CAMPAIGN_KILL_MS", "CAMPAIGN_RUN_MS", "TETHER_TIMEOUT", "TETHER_HOSTFILE",
              "TETHER_COORDINATOR"):
        base.pop(k, None)
    if run["cable"]:
        base["CAMPAIGN_RUN_MS"] = run_ms(run)
    if backend.startswith("rdma"):
        k, ring = 2 if run["cable"] else 1, backend.endswith("-ring")
        linked = lambda i, j: i != j and (not ring or (i - j) % n in (1, n - 1))
        matrix = [[("rdma_en%d" % j if k == 1 else ["rdma_en%d" % j, "rdma_en%d" % (j + 8)])
                   if linked(i, j) else None for j in range(n)] for i in range(n)]
        with open(os.path.join(work, "devices.json"), "w") as f:
            json.dump(matrix, f)
        sv_dir = tempfile.mkdtemp(prefix="svc", dir="/tmp")
        base.update(TETHER_BACKEND="rdma", TETHER_RDMA_QP=backend[5:7],
                    TETHER_COORDINATOR="127.0.0.1:%d" % free_ports(["127.0.0.1"])[0],
                    TETHER_IBV_DEVICES=os.path.join(work, "devices.json"),
                    TETHER_IBVERBS_LIB=args.softverbs, SOFTVERBS_PROFILE="apple",
                    SOFTVERBS_DEVICES=RDMA_DEVICES, SOFTVERBS_DIR=sv_dir,
                    SOFTVERBS_SEED=str(run["seed"]))
        if run["loss"]:
            base.update(SOFTVERBS_LOSS=str(run["loss"]), SOFTVERBS_LOSS_BURST=str(run["burst"]))
        if run["jitter_us"]:
            base["SOFTVERBS_JITTER_US"] = str(run["jitter_us"])
        if run["cable"]:
            c = run["cable"]
            base["SOFTVERBS_DEVICE_DOWN"] = "rdma_en%d#%d@%g%s" % (
                c["device"], c["rank"], c["at"], "-%g" % c["up"] if c["up"] else "")
    else:
        kind, k = backend.split("-")
        addrs = ["127.0.0.1", "127.0.0.2"][: int(k[1])] if kind == "mesh" else ["127.0.0.1"] * int(k[1])
        ports = iter(free_ports(addrs * n))
        hosts = [["%s:%d" % (a, next(ports)) for a in addrs] for _ in range(n)]
        with open(os.path.join(work, "hostfile.json"), "w") as f:
            json.dump(hosts, f)
        base.update(TETHER_BACKEND=kind, TETHER_HOSTFILE=os.path.join(work, "hostfile.json"))
    envs = []
    for r in range(n):
        e = dict(base, TETHER_RANK=str(r))
        if run["kill"] and run["kill"]["rank"] == r:
            e["CAMPAIGN_KILL_MS"] = str(run["kill"]["ms"])
        envs.append(e)
    return envs


def last_line(path):
    with open(path, errors="replace") as f:
        lines = [l for l in f.read().splitlines() if l.startswith(("OK", "WRONG", "FAILED", "KILLED"))]
    return lines[-1] if lines else ""


def run_netns(run, args):
    """A TCP cable run: 2 hosts in namespaces, 2 links, link 1 down or flapped (lab/netns, which
    stops both ranks at the first failure: no kill is judged here)."""
    work = tempfile.mkdtemp(prefix="campaign-")
    kind, c = run["backend"].split("-")[0], run["cable"]
    fault = "%g:flap:0-1/1:%g" % (c["at"], c["up"] - c["at"]) if c["up"] else "%g:down:0-1/1" % c["at"]
    cmd = [args.netns, "-n", "2", "-t", kind, "-k", "2", "-r", "0", "--backend", kind,
           "--timeout", str(args.run_timeout), "--fault", fault,
           "--env", "CAMPAIGN_RUN_MS=" + run_ms(run),
           "--", args.rank_bin, kind,
           run["collective"], run["dtype"], str(run["bytes"]), str(args.iters), str(run["seed"])]
    with open(os.path.join(work, "netns.log"), "w") as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
    with open(os.path.join(work, "netns.log"), errors="replace") as f:
        text = f.read()
    what = "%s %s over netns" % (run["backend"], run["collective"])
    if "WRONG" in text:
        first = [l for l in text.splitlines() if "WRONG" in l][0]
        return "wrong", what + ": wrong result", first, work, None
    if rc == 0:
        shutil.rmtree(work, ignore_errors=True)
        return "ok", "", "", work, None
    if rc == 77:
        why = text.strip().splitlines()[-1]
        return "failed", what + ": no network namespaces here", why, work, None
    # campaign_rank's own line ("FAILED <call> <error> at ..."), of whichever rank lab/netns shows
    errs = [l.strip() for l in text.splitlines() if l.strip().startswith("FAILED ")]
    err = errs[0].split()[2] if errs and len(errs[0].split()) > 2 else "exit %d" % rc
    return "failed", "%s: %s" % (what, err), errs[0] if errs else "exit %d" % rc, work, None


def run_one(run, args):
    """Run it; returns (verdict, category, detail, work dir, slowest survivor ms after a kill or
    None). The category (backend, collective, error) is what the summary counts failures by."""
    if run["cable"] and not run["backend"].startswith("rdma"):
        return run_netns(run, args)
    work = tempfile.mkdtemp(prefix="campaign-")
    envs = rank_envs(run, work, args)
    iters = "0" if run["kill"] else str(args.iters)
    cmd = [args.rank_bin, envs[0]["TETHER_BACKEND"], run["collective"], run["dtype"],
           str(run["bytes"]), iters, str(run["seed"])]
    procs, outs = [], []
    for r, env in enumerate(envs):
        out = open(os.path.join(work, "rank%d.log" % r), "w")
        outs.append(out)
        procs.append(subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT))
    limit = time.monotonic() + args.run_timeout + (run["kill"]["ms"] / 1000 if run["kill"] else 0)
    logs = [os.path.join(work, "rank%d.log" % r) for r in range(run["n"])]
    # The others would wait for a rank that could not bind until forming the group times out.
    while time.monotonic() < limit and any(p.poll() is None for p in procs):
        if any(p.returncode == 2 and port_taken(logs[r]) for r, p in enumerate(procs)):
            break
        time.sleep(0.02)
    hung = [r for r, p in enumerate(procs) if p.poll() is None]
    for r in hung:
        procs[r].kill()
        procs[r].wait()
    for out in outs:
        out.close()
    if any(port_taken(l) for l in logs):
        shutil.rmtree(work, ignore_errors=True)
        if envs[0].get("SOFTVERBS_DIR"):
            shutil.rmtree(envs[0]["SOFTVERBS_DIR"], ignore_errors=True)
        return "retry", "", "", work, None
    if envs[0].get("SOFTVERBS_DIR"):
        shutil.rmtree(envs[0]["SOFTVERBS_DIR"], ignore_errors=True)
    lines = [last_line(os.path.join(work, "rank%d.log" % r)) for r in range(run["n"])]
    what = "%s %s" % (run["backend"], run["collective"])
    wrong = [l for l in lines if l.startswith("WRONG")]
    if wrong:
        return "wrong", what + ": wrong result", wrong[0], work, None
    victim = run["kill"]["rank"] if run["kill"] else -1
    if victim >= 0 and lines[victim].startswith("KILLED"):
        return judge_kill(run, lines, hung, work)
    bad = [(r, l) for r, l in enumerate(lines) if l != "OK"]
    if not bad and not hung:
        shutil.rmtree(work, ignore_errors=True)
        return "ok", "", "", work, None
    if hung:
        return "failed", what + ": hung", "rank %d still running after %d s" % (
            hung[0], args.run_timeout), work, None
    r, l = bad[0]
    failed = l.startswith("FAILED") and len(l.split()) > 2
    err = l.split()[2] if failed else "exit %d" % procs[r].returncode
    if victim >= 0:
        what += " before the kill"
    return "failed", "%s: %s" % (what, err), "rank %d: %s" % (r, l), work, None


def judge_kill(run, lines, hung, work):
    """A rank was killed: every survivor must fail with an error within KILL_LIMIT_MS."""
    victim = run["kill"]["rank"]
    killed_at = int(lines[victim].split()[-1])
    slowest = 0
    for r, l in enumerate(lines):
        if r == victim:
            continue
        if r in hung or not l.startswith("FAILED"):
            what = "%s %s" % (run["backend"], run["collective"])
            return "kill-slow", what + ": survivor without an error", \
                "survivor rank %d: %s" % (r, "hung" if r in hung else l or "no output"), work, None
        slowest = max(slowest, int(l.split(" at ")[1].split(":")[0]) - killed_at)
    if slowest > KILL_LIMIT_MS:
        return "kill-slow", "%s %s: survivor slow" % (run["backend"], run["collective"]), \
            "a survivor failed %d ms after the kill" % slowest, work, slowest
    shutil.rmtree(work, ignore_errors=True)
    return "ok", "", "", work, slowest


def repeat_command():
    """This command less any --seed and --repeat: the caller appends the seed."""
    argv, out = sys.argv, []
    for i, a in enumerate(argv):
        if a in ("--seed", "--repeat") or a.startswith(("--seed=", "--repeat=")) or \
                (i and argv[i - 1] in ("--seed", "--repeat")):
            continue
        out.append(a)
    return " ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--rank-bin")
    ap.add_argument("--softverbs")
    ap.add_argument("--seed", type=int, action="append",
                    help="run the run of this seed again (repeatable)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --seed: run each seed's run this many times")
    ap.add_argument("--campaign-seed", type=int)
    ap.add_argument("--runs", type=int, default=0, help="stop after this many runs (0: no bound)")
    ap.add_argument("--seconds", type=float, default=0, help="start no run after this (0: no bound)")
    ap.add_argument("--backends", default=",".join(BACKENDS),
                    help="comma-separated backends: runs that draw another are skipped, so a "
                    "seed's run stays the same whatever the list (default: all of them)")
    ap.add_argument("--n", type=int, default=0, help="ranks of every run (default 2..8 at random)")
    ap.add_argument("--max-bytes", type=int, default=16 << 20)
    ap.add_argument("--iters", type=int, default=3, help="calls per run without a kill")
    ap.add_argument("--kill-prob", type=float, default=0.1)
    ap.add_argument("--run-timeout", type=int, default=60)
    args = ap.parse_args()
    args.rank_bin = args.rank_bin or os.path.join(args.build, "tests/campaign/campaign_rank")
    args.softverbs = args.softverbs or os.path.join(args.build, "tests/softverbs/libsoftverbs.so")
    args.netns = NETNS
    unknown = set(args.backends.split(",")) - set(BACKENDS)
    if unknown:
        ap.error("--backends: no backend %s (the campaign's: %s)" % (
            ", ".join(sorted(unknown)), ", ".join(BACKENDS)))
    if args.seed is None and not args.runs and not args.seconds:
        ap.error("give --runs, --seconds or --seed")
    if args.seed is not None:
        seeds = iter([seed for seed in args.seed for _ in range(args.repeat)])
    else:
        cseed = args.campaign_seed
        if cseed is None:
            cseed = random.SystemRandom().getrandbits(31)
        print("campaign seed %d (repeat with --campaign-seed %d)" % (cseed, cseed), flush=True)
        crng = random.Random(cseed)
        seeds = iter(lambda: crng.getrandbits(31), None)
    start = time.monotonic()
    counts = {"runs": 0, "ok": 0, "wrong": 0, "failed": 0, "kills": 0, "kill-slow": 0}
    failed_by, slowest = {}, 0
    for seed in seeds:
        if args.seed is None and ((args.runs and counts["runs"] >= args.runs) or
                                  (args.seconds and time.monotonic() - start >= args.seconds)):
            break
        run = draw(seed, args)
        if run["backend"] not in args.backends.split(","):
            continue
        t0 = time.monotonic()
        for _ in range(3):
            verdict, category, detail, work, kill_ms = run_one(run, args)
            if verdict != "retry":
                break
            print("       a port was taken by another program: starting seed %d again" % seed)
        if verdict == "retry":
            verdict, category = "failed", "ports taken by other programs, 3 times"
        counts["runs"] += 1
        counts["kills"] += 1 if run["kill"] else 0
        slowest = max(slowest, kill_ms or 0)
        counts[verdict] += 1
        if verdict != "ok":
            key = "%-9s %s" % (verdict, category)
            failed_by[key] = failed_by.get(key, 0) + 1
        after_kill = " kill->fail %d ms" % kill_ms if kill_ms is not None else ""
        print("%-6s %5.1fs %s%s" % (verdict, time.monotonic() - t0, describe(run), after_kill),
              flush=True)
        if verdict != "ok":
            print("       %s: %s\n       logs: %s\n       repeat: %s --seed %d" % (
                category, detail, work, repeat_command(), seed), flush=True)
    took = time.monotonic() - start
    print("\nsummary: %d runs in %.0f s (%.1f runs/min): %d ok, %d wrong results, %d failed, "
          "%d kills (%d with a survivor not failing within %d ms; slowest survivor %d ms after "
          "its kill)" % (
              counts["runs"], took, counts["runs"] * 60 / max(took, 1e-9), counts["ok"],
              counts["wrong"], counts["failed"], counts["kills"], counts["kill-slow"],
              KILL_LIMIT_MS, slowest))
    for key, c in sorted(failed_by.items(), key=lambda kv: -kv[1]):
        print("  %3d  %s" % (c, key))
    return 1 if counts["wrong"] or counts["failed"] or counts["kill-slow"] else 0


if __name__ == "__main__":
    sys.exit(main())
