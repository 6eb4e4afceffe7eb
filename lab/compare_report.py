#!/usr/bin/env python3
"""lab/compare_report.py - turns a lab/compare results dir into docs/PERFORMANCE.md and its plots.

  compare_report.py OUT_DIR --doc docs/PERFORMANCE.md --plots docs/perf
  compare_report.py --cpu-run LABEL T -- CMD...   (used by lab/compare: run CMD, print its children's
                                                   CPU seconds, wall seconds and the 64 MiB time_us)

Reads what lab/compare left in OUT_DIR: anchors/ (run_anchors.sh's raw driver outputs, tether's
columns among them), extra/ (reduce-scatter, all-to-all, send/recv), round<k>/{anchors,extra} (the
later rounds: each system keeps its fastest run per size), iperf3.txt, cpu.txt, kernels.*.csv,
netns/, machine.txt. Every ratio on the page compares figures of this one run.
Standard library only; plots with gnuplot (pngcairo, else png).
"""
import glob
import os
import re
import resource
import shutil
import subprocess
import sys
import time

# Sections of docs/PERFORMANCE.md that lab/compare keeps when it regenerates the page: each comes
# from docs/perf/FILE, which its own script writes (write_kept_section) or a person does.
KEPT_SECTIONS = (
    ("ring_mesh.md", "Ring against mesh (lab/ring_mesh, issue 23)", "measured with lab/ring_mesh"),
    ("peers_interleaved.md", "Mesh against the TCP peers, taking turns (lab/peers_interleaved, issue 23)",
     "measured with lab/peers_interleaved"),
    ("one_host.md", "One host against Open MPI's shared memory, taking turns (lab/peers_interleaved "
     "--one-host, issue 40)", "measured with lab/peers_interleaved --one-host"),
    ("ddp.md", "DDP training (lab/ddp, issue 9)", "measured with lab/ddp"),
    ("analysis.md", "Causes and profile notes", "written by hand from profiles"),
)
PEERS_EXCLUDED = ("mpi-vader",)  # shared memory, not TCP: shown, never the "best peer"
MEMORY_TETHER = "tether-mesh-cma"  # tether reading peers' memory (backends/tcp/cma.h): vs mpi-vader
FACTOR = {"allreduce": lambda n: 2.0 * (n - 1) / n, "allgather": lambda n: (n - 1) / n,
          "broadcast": lambda n: 1.0, "reduce_scatter": lambda n: (n - 1) / n,
          "all_to_all": lambda n: (n - 1) / n, "send_recv": lambda n: 1.0}


# ---------------------------------------------------------------- reading

def parse_driver(path):
    rows = {}
    for line in open(path, errors="replace"):
        p = line.split()
        if len(p) < 6 or line.startswith("#"):
            continue
        try:
            rows[int(p[2])] = {"time_us": float(p[3]), "algbw": float(p[4]), "busbw": float(p[5])}
        except ValueError:
            continue
    return rows


def load_runs(base):
    """{(N, coll): {label: {size: row}}} from base/N<n>/<coll>/<label>.txt"""
    data = {}
    for path in glob.glob(os.path.join(base, "N*", "*", "*.txt")):
        parts = path.split(os.sep)
        try:
            n = int(parts[-3][1:])
        except ValueError:
            continue
        rows = parse_driver(path)
        if rows:
            data.setdefault((n, parts[-2]), {})[os.path.basename(path)[:-4]] = rows
    return data


def take_faster(data, again):
    """Fold a second run of tables into data (a later round of lab/compare, or the anchors' own
    repeat of N = 2 all-reduce), keeping each system's faster run per size: the same rule for
    every system, so one slow minute of a shared VM decides no ratio."""
    for key, systems in again.items():
        for label, rows in systems.items():
            mine = data.setdefault(key, {}).setdefault(label, {})
            for size, r in rows.items():
                if size not in mine or r["time_us"] < mine[size]["time_us"]:
                    mine[size] = r


def read_kv(path):
    out = {}
    if os.path.exists(path):
        for line in open(path):
            k, _, v = line.strip().partition(" ")
            if k:
                out[k] = v
    return out


def is_memory(label):
    """A one-host memory path (shared memory, cross-memory attach): compared with its own kind."""
    return label in PEERS_EXCLUDED or label == MEMORY_TETHER


def is_tether(label):
    return label.startswith("tether") and not is_memory(label)


def is_peer(label):
    return not is_tether(label) and not is_memory(label)


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d %s" % (n // div, unit)
    return "%d B" % n


def parse_size(s, who):
    """Bytes of a size such as 8, 64K, 64M or 1G (x1024), or exit naming the script who asked."""
    m = re.fullmatch(r"(\d+)([KMG]?)", s.upper())
    if not m:
        sys.exit("%s: bad size '%s' (e.g. 64M)" % (who, s))
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def ft(us):
    return "%.0f" % us if us >= 100 else "%.1f" % us


def fb(g):
    return "%.2f" % g if g >= 1 else "%.3f" % g if g >= 0.01 else "%.4f" % g


def best(systems, size, pred, key="busbw", low=False):
    """(label, value) of the best system matching pred at size (highest busbw, or lowest time)."""
    cands = [(l, r[size][key]) for l, r in systems.items() if pred(l) and size in r]
    if not cands:
        return None, None
    return (min if low else max)(cands, key=lambda x: x[1])


# ---------------------------------------------------------------- plots

def gnuplot(script):
    if not shutil.which("gnuplot"):
        return False
    return subprocess.run(["gnuplot"], input=script, text=True, capture_output=True).returncode == 0


def terminal():
    r = subprocess.run(["gnuplot", "-e", "set terminal"], capture_output=True, text=True) if shutil.which("gnuplot") else None
    text = (r.stdout + r.stderr) if r else ""
    return "pngcairo size 900,520 font ',10'" if "pngcairo" in text else "png size 900,520"


def plot(systems, coll, n, key, out_png, title, tmpdir):
    # busbw plots leave out the memory paths (mpi-vader, tether-mesh-cma): they flatten every TCP line
    labels = sorted([l for l in systems if key != "busbw" or not is_memory(l)],
                    key=lambda l: (not is_tether(l), l))
    series = []
    for i, l in enumerate(labels):
        f = os.path.join(tmpdir, "%s_%d_%s_%s.dat" % (coll, n, key, l))
        with open(f, "w") as fh:
            for s in sorted(systems[l]):
                fh.write("%d %g\n" % (s, systems[l][s][key]))
        width = 2.5 if is_tether(l) else 1.2
        dash = "dt 2" if is_memory(l) else "dt 1"
        series.append("'%s' using 1:2 with linespoints lw %s %s pt %d title '%s'" % (f, width, dash, 1 + i % 12, l))
    ylabel = "busbw (GB/s)" if key == "busbw" else "time per op (us)"
    sizes = sorted({s for l in labels for s in systems[l]})
    xtics = ", ".join('"%s" %d' % (human(s).replace(" ", ""), s) for s in sizes if s == 4 or s == 8 or s % 4 == 0)
    script = """set terminal %s
set output '%s'
set title '%s'
set termoption noenhanced
set logscale x 2
set xtics (%s) rotate by -45
set xlabel 'size (bytes)'
set ylabel '%s'
%s
set key outside right
set grid
plot %s
""" % (terminal(), out_png, title, xtics, ylabel, "set logscale y 10" if key == "time_us" else "set yrange [0:*]",
       ", \\\n     ".join(series))
    return gnuplot(script)


# ---------------------------------------------------------------- the page

class Page:
    def __init__(self):
        self.lines = []
        self.targets = []  # (target, measured, met)

    def add(self, *ls):
        self.lines.extend(ls)

    def target(self, name, measured, met):
        self.targets.append((name, measured, met))


def coll_table(page, systems, coll, n, limit_ln=None):
    """Markdown table: one row per size, tether columns, the best TCP peer, the ratio."""
    tlabels = sorted([l for l in systems if is_tether(l)])
    plabels = sorted([l for l in systems if not is_tether(l)])
    sizes = sorted({s for r in systems.values() for s in r})
    head = ["size"] + tlabels + plabels + ["best TCP peer", "tether / best peer (busbw)", "tether / best peer (time)"]
    page.add("| " + " | ".join(head) + " |", "|---:" * len(head) + "|")
    for s in sizes:
        cells = [human(s)]
        for l in tlabels + plabels:
            r = systems[l].get(s)
            cells.append("%s / %s" % (ft(r["time_us"]), fb(r["busbw"])) if r else "-")
        pl, pv = best(systems, s, is_peer)
        tl, tv = best(systems, s, is_tether)
        _, pt = best(systems, s, is_peer, "time_us", low=True)
        _, tt = best(systems, s, is_tether, "time_us", low=True)
        cells.append(pl or "-")
        cells.append("%.2f× (%s)" % (tv / pv, tl) if pv and tv else "-")
        cells.append("%.2f×" % (tt / pt) if pt and tt else "-")
        page.add("| " + " | ".join(cells) + " |")
    page.add("")


def memory_rows(page, systems, coll, n):
    """One host, memory paths: tether reading its peers' memory against Open MPI's shared memory.
    Not a target (the targets compare TCP with TCP); shown so the default one-host path is judged
    against its own kind."""
    t, v = systems.get(MEMORY_TETHER, {}), systems.get("mpi-vader", {})
    rs = ["%s %.2f×" % (human(s), t[s]["busbw"] / v[s]["busbw"])
          for s in sorted(t) if s >= 65536 and s in v and v[s]["busbw"]]
    if rs:
        page.add("One host, memory paths, %s N = %d (%s busbw / mpi-vader busbw; not a target): %s."
                 % (coll, n, MEMORY_TETHER, ", ".join(rs)), "")


def ratio_at(systems, size, tether_label=None, key="busbw"):
    """tether (given label, else best tether column) over the best TCP peer at size."""
    if tether_label:
        tv = systems.get(tether_label, {}).get(size, {}).get(key)
    else:
        _, tv = best(systems, size, is_tether, key, low=(key == "time_us"))
    _, pv = best(systems, size, is_peer, key, low=(key == "time_us"))
    if tv is None or pv is None or pv == 0:
        return None
    return tv / pv


def kept_section_head(name, title, origin):
    return ["## " + title, "",
            "(From `docs/perf/%s`, %s; not regenerated by lab/compare.)" % (name, origin), ""]


def measured_stamp(src):
    """When, on which commit and how loaded: the line a kept section's figures start with."""
    p = subprocess.run(["git", "-C", src, "describe", "--always", "--dirty"], capture_output=True,
                       text=True)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return "%s, commit %s, 1-minute load when written: %.2f" % (when, p.stdout.strip() or "?",
                                                                os.getloadavg()[0])


def write_kept_section(src, name, body):
    """Write body to SRC/docs/perf/NAME and put it, as its kept section (KEPT_SECTIONS), into
    SRC/docs/PERFORMANCE.md: in place of the old one, else before the DDP section, else at the end."""
    title, origin = next((t, o) for n, t, o in KEPT_SECTIONS if n == name)
    with open(os.path.join(src, "docs", "perf", name), "w") as f:
        f.write(body.rstrip("\n") + "\n")
    section = "\n".join(kept_section_head(name, title, origin)) + "\n" + body.rstrip("\n") + "\n\n"
    path = os.path.join(src, "docs", "PERFORMANCE.md")
    with open(path) as f:
        doc = f.read()
    head = "## %s\n" % title
    if head in doc:
        i = doc.index(head)
        j = doc.find("\n## ", i + len(head))
        doc = doc[:i] + section + (doc[j + 1:] if j >= 0 else "")
    elif "\n## DDP training" in doc:
        i = doc.index("\n## DDP training") + 1
        doc = doc[:i] + section + doc[i:]
    else:
        doc = doc.rstrip("\n") + "\n\n" + section
    with open(path, "w") as f:
        f.write(doc.rstrip("\n") + "\n")


def main_cpu_run(args):
    label, t = args[0], args[1]
    cmd = args[args.index("--") + 1:]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tus = None
    for line in p.stdout.splitlines():
        q = line.split()
        if len(q) >= 6 and not line.startswith("#") and q[2] == "67108864":
            tus = float(q[3])
    if p.returncode != 0 or tus is None:
        sys.stderr.write(p.stderr[-2000:])
        sys.exit(1)
    print("cpu %s %s %.3f %.3f %.3f" % (label, t, cpu, wall, tus))


def main():
    if sys.argv[1:2] == ["--cpu-run"]:
        return main_cpu_run(sys.argv[2:])
    out = sys.argv[1]
    doc = sys.argv[sys.argv.index("--doc") + 1]
    plots = sys.argv[sys.argv.index("--plots") + 1]
    os.makedirs(plots, exist_ok=True)
    for old in glob.glob(os.path.join(plots, "*.png")):
        os.remove(old)
    tmp = os.path.join(out, "plotdata")
    os.makedirs(tmp, exist_ok=True)
    rel = os.path.relpath(plots, os.path.dirname(doc))
    anchors = os.path.join(out, "anchors")
    data = load_runs(anchors)
    repeated = load_runs(os.path.join(anchors, "repeat"))
    take_faster(data, repeated)
    extra = load_runs(os.path.join(out, "extra"))
    rounds = sorted(glob.glob(os.path.join(out, "round[0-9]")))
    for r in rounds:
        take_faster(data, load_runs(os.path.join(r, "anchors")))
        take_faster(extra, load_runs(os.path.join(r, "extra")))
    machine = read_kv(os.path.join(out, "machine.txt"))
    versions = os.path.join(anchors, "versions.txt")
    ns = sorted({k[0] for k in list(data) + list(extra)})
    page = Page()

    # limits
    iperf = {}
    if os.path.exists(os.path.join(out, "iperf3.txt")):
        for line in open(os.path.join(out, "iperf3.txt")):
            q = line.split()
            if len(q) == 3:
                iperf[int(q[1])] = float(q[2])
    membw = {}
    p = os.path.join(anchors, "limits.membw.txt")
    if os.path.exists(p):
        for line in open(p):
            q = line.split()
            if len(q) == 5 and q[0] == "membw":
                membw[(q[1], int(q[2]))] = float(q[3])
    pingpong = []
    p = os.path.join(anchors, "limits.pingpong.txt")
    if os.path.exists(p):
        pingpong = [line.split() for line in open(p) if line.startswith("pingpong")]

    P = page.add
    P("# tether performance",
      "",
      "Generated by `lab/compare` on %s (UTC): tether, the peer libraries of `../shared/anchors` "
      "(gloo, Open MPI over TCP, torch.distributed gloo) and the machine's limits, **all measured in "
      "this one run** on the same ranks and sizes. Do not edit by hand: rerun `lab/compare` "
      "(`--quick` for a short development run). Raw results: `%s`." % (machine.get("date_utc", "?"), out),
      "",
      "Cells are `time µs / busbw GB/s` with the nccl-tests bus factors (all-reduce 2(N−1)/N; "
      "all-gather, reduce-scatter, all-to-all (N−1)/N; broadcast 1). *Best TCP peer* excludes "
      "`mpi-vader` (shared memory, a different physical path, shown for reference). Every tether "
      "column goes through its sockets (`TETHER_TCP_CMA_MIN=0 TETHER_SHM=0`) except `tether-mesh-cma`, which takes "
      "tether's default path on one host (shared rings, and the peers' memory from 4 MiB on Linux); it is compared with `mpi-vader` "
      "only, in a line under each table. Ratios above 1 "
      "favour tether for busbw, below 1 for time. The busbw plots leave the memory paths (`mpi-vader`, `tether-mesh-cma`) out (their scale "
      "would flatten the TCP lines); the time plots keep them, dashed.",
      "")
    if machine.get("quick") == "1":
        P("> **Quick run** (`--quick`): sizes ≤ 1 MiB, 0.1 s per size, N = %s only. The targets at "
          "16 MiB and above, the CPU-time and the shaped-mesh targets are not measured by it." % machine.get("ns"), "")

    P("## Machine", "", "| | |", "|---|---|")
    for k in ("cpu", "cpus", "mem_gib", "virt", "kernel", "os", "gcc", "tether_commit", "build_type", "settle_wait_s",
              "load_at_start", "load_at_end", "placement_at_start", "placement_at_end", "rounds"):
        if k in machine:
            P("| %s | %s |" % (k, machine[k]))
    if os.path.exists(versions):
        for line in open(versions):
            if not line.startswith("#") and line.strip():
                k, _, v = line.strip().partition(" ")
                P("| %s | %s |" % (k, v))
    try:
        load_start = float(machine.get("load_at_start", "0").split()[0])
        load_end = float(machine.get("load_at_end", "0").split()[0])
        cpus = float(machine.get("cpus", "2"))
    except ValueError:
        load_start = load_end = 0
        cpus = 2
    if max(load_start, load_end) > cpus:
        P("", "> **Warning: the machine was busy during this run** (1-minute load %.1f at the start, %.1f at the "
          "end, on %d CPUs): other jobs shared the cores, so every figure below is inflated by waiting for a "
          "CPU, and the peers that busy-poll (Open MPI) suffer most. Rerun on a quiet machine before "
          "drawing conclusions." % (load_start, load_end, cpus))
    P("", "The machine is shared and has 2 vCPUs: N = 3 and 4 run more ranks than cores, and figures "
      "vary 1.1–1.4× from run to run (see the anchors' RESULTS.md); compare columns of this page with "
      "each other, not with another day's page.", "")
    if rounds:
        P("Every table ran %d times (rounds of `lab/compare`, each minutes after the last)%s; each "
          "system's cell is the fastest of its runs, for every system alike." % (
              len(rounds) + 1, ", and the anchors ran %s once more (their noise check)" % ", ".join(
                  "N = %d %s" % k for k in sorted(repeated)) if repeated else ""), "")
    elif repeated:
        P("The anchors run %s twice (their noise check); each system's cell there is the faster of its "
          "two runs, for every system alike." % ", ".join("N = %d %s" % k for k in sorted(repeated)), "")

    P("## Limits (same run)", "", "| limit | value |", "|---|---:|")
    for (k, b), v in sorted(membw.items()):
        P("| %s, %s, 1 thread | %.2f GB/s |" % (k, human(b), v))
    for q in pingpong:
        P("| TCP ping-pong %s B, %s: RTT median (one way) | %s µs (%s µs) |" % (q[2], q[1], q[3], q[4]))
    for k in sorted(iperf):
        P("| iperf3 loopback, %d stream%s: aggregate / per stream = L_%d | %.2f GB/s / %.2f GB/s |" % (
            k, "s" if k > 1 else "", k, iperf[k], iperf[k] / k))
    P("")

    # ---- all-reduce
    P("## All-reduce (float32 sum)", "")
    for n in ns:
        systems = data.get((n, "allreduce"), {})
        if not systems:
            continue
        P("### N = %d" % n, "")
        for key, name in (("busbw", "busbw"), ("time_us", "time")):
            png = os.path.join(plots, "allreduce_N%d_%s.png" % (n, name))
            if plot(systems, "allreduce", n, key, png, "all-reduce float32, N=%d, %s" % (n, name), tmp):
                P("![all-reduce N=%d %s](%s/%s)" % (n, name, rel, os.path.basename(png)))
        P("")
        coll_table(page, systems, "allreduce", n)

    # ---- targets: all-reduce
    def auto_label(systems):
        """tether's default configuration: the mesh backend (ring if only it ran), algorithm auto."""
        for l in ("tether-mesh", "tether-ring"):
            if l in systems:
                return l
        return None

    for n in ns:
        systems = data.get((n, "allreduce"), {})
        tl = auto_label(systems)
        if not tl:
            continue
        memory_rows(page, systems, "allreduce", n)
        small = [s for s in sorted(systems[tl]) if s <= 4096 and "mpi-tcp" in systems and s in systems["mpi-tcp"]]
        if small:
            rs = [(s, systems[tl][s]["time_us"] / systems["mpi-tcp"][s]["time_us"]) for s in small]
            worst = max(rs, key=lambda x: x[1])
            page.target("all-reduce ≤ 4 KiB, N=%d: time ≤ 0.8× mpi-tcp (%s, auto)" % (n, tl),
                        "worst %.2f× at %s (best %.2f×)" % (worst[1], human(worst[0]), min(r for _, r in rs)),
                        worst[1] <= 0.8)
        mid = [s for s in sorted(systems[tl]) if 65536 <= s <= 4 << 20]
        rs = [(s, ratio_at(systems, s, tl)) for s in mid if ratio_at(systems, s, tl)]
        if rs:
            worst = min(rs, key=lambda x: x[1])
            page.target("all-reduce 64 KiB–4 MiB, N=%d: busbw ≥ 1.2× best peer (%s)" % (n, tl),
                        "worst %.2f× at %s" % (worst[1], human(worst[0])), worst[1] >= 1.2)
        big = [s for s in sorted(systems[tl]) if s >= 16 << 20]
        ln = iperf.get(n, 0) / n if n in iperf else None
        for s in big:
            _, pv = best(systems, s, is_peer)
            tv = systems[tl][s]["busbw"]
            need = min(1.2 * pv, 0.9 * ln) if (pv and ln) else (1.2 * pv if pv else None)
            if need:
                page.target("all-reduce %s, N=%d: busbw ≥ min(1.2× best peer, 0.9·L_%d) (%s)" % (human(s), n, n, tl),
                            "%.3f GB/s vs needed %.3f (best peer %.3f, L_%d %s) → %.2f× of needed" % (
                                tv, need, pv, n, "%.3f" % ln if ln else "?", tv / need), tv >= need)

    # ---- other collectives
    P("## Other collectives", "")
    for coll, src in (("allgather", data), ("broadcast", data), ("reduce_scatter", extra), ("all_to_all", extra),
                      ("send_recv", extra)):
        for n in ns:
            systems = src.get((n, coll), {})
            if not systems:
                continue
            P("### %s, N = %d" % (coll, n), "")
            png = os.path.join(plots, "%s_N%d_busbw.png" % (coll, n))
            if plot(systems, coll, n, "busbw", png, "%s float32, N=%d, busbw" % (coll, n), tmp):
                P("![%s N=%d](%s/%s)" % (coll, n, rel, os.path.basename(png)), "")
            coll_table(page, systems, coll, n)
            if coll == "send_recv":
                continue
            tl = auto_label(systems)
            big = [s for s in sorted(systems.get(tl, {})) if s >= 65536]
            rs = [(s, ratio_at(systems, s, tl)) for s in big if ratio_at(systems, s, tl)]
            memory_rows(page, systems, coll, n)
            if rs:
                worst = min(rs, key=lambda x: x[1])
                page.target("%s ≥ 64 KiB, N=%d: busbw ≥ 1.2× best peer (%s)" % (coll, n, tl),
                            "worst %.2f× at %s" % (worst[1], human(worst[0])), worst[1] >= 1.2)
            elif tl:
                page.target("%s ≥ 64 KiB, N=%d: busbw ≥ 1.2× best peer" % (coll, n), "no peer figure in this run", None)

    # ---- CPU
    cpu = os.path.join(out, "cpu.txt")
    if os.path.exists(cpu):
        runs = {}
        for line in open(cpu):
            q = line.split()
            if len(q) == 6 and q[0] == "cpu":
                runs.setdefault(q[1], {})[float(q[2])] = (float(q[3]), float(q[4]), float(q[5]))
        P("## CPU time per rank, 64 MiB all-reduce, N = 4", "",
          "Each system ran the one size twice, with time budgets of 1 s and 4 s; the difference removes "
          "start-up. CPU per rank per op = (ΔCPU / Δwall) × time per op / 4, where CPU is user + system "
          "time of every process of the job.", "",
          "| system | ΔCPU s | Δwall s | cores busy | time per op ms | CPU per rank per op ms |", "|---|---:|---:|---:|---:|---:|")
        per = {}
        for label, r in sorted(runs.items()):
            if len(r) < 2:
                continue
            (c1, w1, t1), (c2, w2, t2) = r[min(r)], r[max(r)]
            if w2 - w1 <= 0.2:
                continue
            busy = (c2 - c1) / (w2 - w1)
            top = (t1 + t2) / 2 / 1e3
            per[label] = busy * top / 4
            P("| %s | %.2f | %.2f | %.2f | %.1f | %.1f |" % (label, c2 - c1, w2 - w1, busy, top, per[label]))
        P("")
        tl = [l for l in per if is_tether(l)]
        pl = [l for l in per if is_peer(l)]
        if tl and pl:
            bp = min(pl, key=lambda l: per[l])
            r = per[tl[0]] / per[bp]
            page.target("CPU per rank, 64 MiB all-reduce N=4: ≤ 1.2× best peer's (%s)" % bp, "%.2f×" % r, r <= 1.2)

    # ---- kernels
    for f in sorted(glob.glob(os.path.join(out, "kernels.*.csv")), key=len):
        rows = [line.strip().split(",") for line in open(f)][1:]
        rows = [r for r in rows if len(r) == 9]
        if not rows:
            continue
        variant = os.path.basename(f)[len("kernels."):-4]
        P("## Reduction kernels", "", "`%s`: one thread, the kernel set this CPU gets (core/reduce.c picks AVX2/F16C "
          "kernels at run time where the CPU has them); GB/s = bytes of the destination per second (memcpy moves 2S, "
          "a reduction 3S); Gel/s = 10⁹ elements/s; vs memcpy = GB/s over memcpy's at the same size; vs f32 = "
          "elements/s over the float32 kernel's with the same op. Best and median of rounds that time every row once "
          "each, so load lands on all rows alike." % variant, "",
          "| kernel | dtype | op | size | GB/s (best) | GB/s (median) | Gel/s | vs memcpy | vs f32 |",
          "|---|---|---|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            P("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (r[0], r[1], r[2], human(int(r[3])), r[4], r[5], r[6], r[7],
                                                                   r[8] if r[0] != "memcpy" else "-"))
        P("")
        for size in sorted({int(r[3]) for r in rows}):
            f32 = [r for r in rows if r[0] == "reduce" and r[1] == "float32" and r[2] == "sum" and int(r[3]) == size]
            if f32:
                v = float(f32[0][7])
                page.target("fp32 sum kernel ≥ 70%% of memcpy, %s" % human(size), "%.0f%%" % (100 * v), v >= 0.7)
            for dt in ("bfloat16", "float16"):
                rr = [float(r[8]) for r in rows if r[0] == "reduce" and r[1] == dt and int(r[3]) == size]
                if rr:
                    page.target("%s kernels ≥ 50%% of fp32 elements/s, %s (worst op)" % (dt, human(size)),
                                "%.0f%%" % (100 * min(rr)), min(rr) >= 0.5)

    # ---- netns
    nd = os.path.join(out, "netns")
    if os.path.exists(os.path.join(out, "netns.skipped")):
        P("## Shaped network-namespace mesh", "", "Not measured: %s" % open(os.path.join(out, "netns.skipped")).read().strip(), "")
        page.target("shaped netns mesh/ring targets", "not measured (no namespaces)", None)
    elif os.path.isdir(nd):
        rate = read_kv(os.path.join(nd, "rate.txt")).get("rate", "400mbit")
        rbps = float(re.match(r"(\d+)", rate).group(1)) * {"k": 1e3, "m": 1e6, "g": 1e9}[re.search(r"([kmg])bit", rate).group(1)] / 8 / 1e9
        P("## Shaped network-namespace mesh (lab/netns)", "",
          "Hosts are network namespaces joined by veth links, each its own /30 in 192.168.200.0/22, each "
          "end shaped with `tc tbf` to R = %s (%.3f GB/s), MTU 9000; one rank per host, "
          "TETHER_IFACE_PRIORITY=192.168.200., TCP congestion control cubic (lab/netns --cc: BBR's rate "
          "estimate is misled by the token bucket); each time is the median of 3 timed blocks. Link check (iperf3 over one link): %s" % (
              rate, rbps, (open(os.path.join(nd, "link_iperf3.txt")).read().strip() or "-")
              if os.path.exists(os.path.join(nd, "link_iperf3.txt")) else "-"), "",
          "| topology | algorithm | size | time ms | busbw GB/s | vs target |", "|---|---|---:|---:|---:|---:|")
        res = {}
        for f in sorted(glob.glob(os.path.join(nd, "*.csv"))):
            m = re.match(r"(mesh|ring)(\d+)\.(.+)\.csv", os.path.basename(f))
            if not m:
                continue
            topo, n, algo = m.group(1), int(m.group(2)), m.group(3)
            target = 0.9 * ((n - 1) if topo == "mesh" else 2) * rbps
            for line in open(f):
                q = line.strip().split(",")
                if len(q) == 11 and q[0] == "all_reduce":
                    # busbw from bytes and time (the CSV rounds to 3 decimals)
                    size, tus = int(q[2]), float(q[7])
                    bus = size / (tus * 1e3) * 2 * (n - 1) / n if tus > 0 else 0
                    # bf16 on the wire: busbw counted in float32 bytes, as tether bench prints it
                    res.setdefault((topo, n), {}).setdefault(algo, {})[size] = bus
                    P("| %s N=%d | %s | %s | %.1f | %.4f | %.2f× |" % (topo, n, algo, human(size), tus / 1e3, bus, bus / target))
        P("")
        for (topo, n), algos in sorted(res.items()):
            target = 0.9 * ((n - 1) if topo == "mesh" else 2) * rbps
            size = max(s for a in algos.values() for s in a)
            fp32 = {a: v.get(size, 0) for a, v in algos.items() if not a.endswith("bf16")}
            if not fp32:
                continue
            ba = max(fp32, key=lambda a: fp32[a])
            page.target("netns %s N=%d: busbw ≥ 90%% of %s·R (best algorithm, %s)" % (topo, n, "(N−1)" if topo == "mesh" else "2", human(size)),
                        "%.2f× of target (%s)" % (fp32[ba] / target, ba), fp32[ba] >= target)
            if "auto" in fp32:
                page.target("netns %s N=%d: auto picks the best algorithm" % (topo, n),
                            "auto %.4f vs best %.4f (%s)" % (fp32["auto"], fp32[ba], ba), fp32["auto"] >= 0.95 * fp32[ba])
            if "auto+bf16" in algos and "auto" in fp32 and fp32["auto"] > 0:
                r = algos["auto+bf16"].get(size, 0) / fp32["auto"]
                page.target("netns %s N=%d: bf16 on the wire ≥ 1.8× fp32 busbw" % (topo, n), "%.2f×" % r, r >= 1.8)

    # ---- targets summary, placed after the limits
    summary = ["## Issue 7 targets, this run", "", "| target | measured | met |", "|---|---|---|"]
    for name, measured, met in page.targets:
        summary.append("| %s | %s | %s |" % (name, measured, "yes" if met else "no" if met is not None else "n/a"))
    nmet = sum(1 for t in page.targets if t[2])
    summary += ["", "%d of %d measured targets met." % (nmet, sum(1 for t in page.targets if t[2] is not None)), ""]
    idx = page.lines.index("## All-reduce (float32 sum)")
    page.lines[idx:idx] = summary
    top = os.path.join(out, "perf_top.txt")
    if os.path.exists(top) and os.path.getsize(top):
        page.add("## Profile of this run", "", "`perf record -e cpu-clock --call-graph dwarf` of rank 0, N = 2, "
                 "4 MiB float32 all-reduce (auto), self time per symbol ([k] kernel, [.] user):", "", "```")
        page.add(*[line.rstrip() for line in open(top)])
        page.add("```", "")
    # Hand-written sections kept beside the plots: the figures above are regenerated, these are not.
    for name, title, origin in KEPT_SECTIONS:
        notes = os.path.join(plots, name)
        if os.path.exists(notes):
            page.add(*kept_section_head(name, title, origin))
            page.add(*open(notes).read().rstrip().splitlines())
    with open(doc, "w") as f:
        f.write("\n".join(page.lines) + "\n")


if __name__ == "__main__":
    main()
