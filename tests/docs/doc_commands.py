"""tests/docs/doc_commands.py SOURCE_DIR [--list] [--only TEXT]: run every shell command that
README.md, python/README.md and docs/*.md show, as written, in a fresh copy of the source tree.

Every ```sh block counts: each line (continuation lines joined) is one command, run by bash in the
copy's root, in document order (README first: it builds), with stdin at EOF. Each document is one
reader's terminal: what a command exports, and where it cd's, holds for the document's next
commands. A reader's environment is assumed, nothing more:
- PATH is Debian's default, so python3 is the system's (with numpy, as docs/python.md asks), and
  the install the README makes comes first on it: its `cmake --install build` goes to a staging
  root (DESTDIR), which stands for /usr/local, so bare `tether` is the installed command.
- The placeholders the docs use for the reader's own program (./my_program, ./train, train.py)
  are small stand-ins: the example all_sum, and a torch script that all-reduces once.

A block the machine cannot run is marked in the Markdown, on the line before its fence, with an
HTML comment the reader does not see:
    <!-- doc-test: skip: REASON -->         never run here (needs Macs, cables, other hosts)
    <!-- doc-test: requires: PROG ... -->   run when every PROG is on PATH, else skipped
    <!-- doc-test: except: START: REASON --> the block's commands that begin with START are not run
Skips are listed with their reasons; any failing command fails the test (exit 1).
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MARK = re.compile(r"^<!--\s*doc-test:\s*(skip|requires|except):\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")
SHELL_LANGS = {"sh", "bash", "shell", "console"}
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
COMMAND_TIMEOUT_S = 1200

STAND_INS = {
    # the reader's program, as in `tether launch -n 4 -- ./my_program args`
    "my_program": "#!/bin/sh\nexec \"$(dirname \"$0\")/build/examples/all_sum\"\n",
    "train": "#!/bin/sh\nexec \"$(dirname \"$0\")/build/examples/all_sum\"\n",
    # the reader's torch script (docs/torch.md): one all-reduce over backend="tether"
    "train.py": ("import torch, torch.distributed as dist, tether_torch\n"
                 "dist.init_process_group(backend='tether')\n"
                 "x = torch.ones(4) * (dist.get_rank() + 1)\n"
                 "dist.all_reduce(x)\n"
                 "print(dist.get_rank(), x.tolist())\n"
                 "dist.destroy_process_group()\n"),
}


def documents(src):
    docs = ["README.md", "python/README.md"] + sorted(
        os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md")))
    return [d for d in docs if os.path.exists(os.path.join(src, d))]


def commands(path):
    """(line number, command, mark) for every command of every shell block of path."""
    found, mark, lines = [], None, open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            m = MARK.match(lines[i])
            mark = (m.group(1), m.group(2)) if m else (mark if not lines[i].strip() else None)
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not FENCE.match(lines[end]):
            end += 1
        if fence.group(1) in SHELL_LANGS:
            cmd, start = "", None
            for n in range(i + 1, end):
                text = lines[n]
                if not cmd and (not text.strip() or text.lstrip().startswith("#")):
                    continue
                start = start or n + 1
                cmd += text + "\n" if text.endswith("\\") else text
                if not text.endswith("\\"):
                    found.append((start, cmd, mark))
                    cmd, start = "", None
        mark, i = None, end + 1
    return found


def fresh_copy(src, dest):
    """The tracked and unignored files of the checkout (no build trees), or all but build*/."""
    listed = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True)
    if listed.returncode == 0:
        for rel in filter(None, listed.stdout.decode().split("\0")):
            if os.path.isfile(os.path.join(src, rel)):
                os.makedirs(os.path.join(dest, os.path.dirname(rel)), exist_ok=True)
                shutil.copy2(os.path.join(src, rel), os.path.join(dest, rel))
    else:
        shutil.copytree(src, dest, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("build*", ".git"))
    for name, text in STAND_INS.items():
        with open(os.path.join(dest, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(dest, name), 0o755)


def environment(tree, stage):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TETHER_", "MLX_", "MCCL_")) and k not in ("PYTHONPATH", "RANK",
                                                                        "WORLD_SIZE")}
    env.update(PATH=f"{stage}/usr/local/bin:{DEFAULT_PATH}", DESTDIR=stage,
               LD_LIBRARY_PATH=f"{stage}/usr/local/lib", HOME=env.get("HOME", tree))
    return env


# Runs one command in the document's terminal: its exports and directory, saved after each one.
WRAPPER = """[ -f "$DOC_STATE" ] && . "$DOC_STATE"; cd "$(cat "$DOC_STATE.cwd" 2>/dev/null || pwd)"
eval "$DOC_COMMAND"; rc=$?
export -p | grep -v ' DOC_' >"$DOC_STATE"; pwd >"$DOC_STATE.cwd"; exit $rc
"""


def skip_reason(mark, cmd, path):
    if not mark:
        return None
    kind, text = mark
    if kind == "skip":
        return text
    if kind == "requires":
        missing = [p for p in text.split() if not shutil.which(p, path=path)]
        return f"needs {', '.join(missing)}" if missing else None
    start, _, reason = text.partition(":")
    return reason.strip() if cmd.startswith(start.strip()) else None


def main(argv):
    src = os.path.abspath(argv[1])
    listing = "--list" in argv
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    work = tempfile.mkdtemp(prefix="tether-doc-commands-")
    tree, stage = os.path.join(work, "tree"), os.path.join(work, "stage")
    failed, skipped, ran = [], [], 0
    try:
        if not listing:
            fresh_copy(src, tree)
        env = environment(tree, stage)
        for doc in documents(src):
            for line, cmd, mark in commands(os.path.join(src, doc)):
                where = f"{doc}:{line}"
                shown = cmd.replace("\n", " ")
                if only and only not in shown:
                    continue
                reason = skip_reason(mark, cmd, env["PATH"])
                if reason:
                    skipped.append(f"{where}: {shown}  [{reason}]")
                    continue
                if listing:
                    print(f"{where}: {shown}")
                    continue
                print(f"== {where}: {shown}", flush=True)
                t0 = time.monotonic()
                try:
                    state = {"DOC_STATE": os.path.join(work, "state-" + doc.replace("/", "_")),
                             "DOC_COMMAND": cmd}
                    rc = subprocess.run(["nice", "bash", "-c", WRAPPER], cwd=tree,
                                        env={**env, **state}, stdin=subprocess.DEVNULL,
                                        timeout=COMMAND_TIMEOUT_S).returncode
                except subprocess.TimeoutExpired:
                    rc = "timed out"
                ran += 1
                print(f"-- {where}: status {rc} in {time.monotonic() - t0:.0f} s", flush=True)
                if rc != 0:
                    failed.append(f"{where}: {shown}  (status {rc})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for s in skipped:
        print(f"skipped {s}")
    for f in failed:
        print(f"FAILED {f}", file=sys.stderr)
    print(f"{ran} command(s) run, {len(failed)} failed, {len(skipped)} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
