#!/usr/bin/env python3
"""tests/layers/layers.py - the rules that keep the backends one-way, checked on the real tree.

Usage: layers.py SOURCE_DIR OBJECT_LIST (a file naming the library's compiled objects, one a line).

Include graph (from the #include "..." lines of the library, core/, hostfile/, backends/, and of the
tether command: cli/, launcher/, config_tool/, bench/, over tools/):
  - backends/net/ (what every backend shares) includes no other backend's header;
  - no backend includes another backend's private header (*_impl.h), and rdma/ and tcp/ include
    nothing of each other (RDMA builds on net/ only);
  - the engine's private headers (backends/tcp/engine_impl.h and the per-file engine_*.h beside
    it; not engine.h) are included only by the engine's own files (tcp/engine*.c) and each other;
  - the headers form no include cycle, nor do the modules of a folder (a .c with its .h; the TCP
    engine's two halves, engine.c and engine_rx.c, count as one, and engine.h, the engine's face,
    as one of its own);
  - tools/ (what the subcommands share: say, argv0, strings, ssh, network command text) includes
    and calls none of them, and launcher/ and config_tool/ include and call nothing of each other;
  - a header of launcher/ or config_tool/ (one per concern) includes only headers it uses: a name
    each declares (a macro, type, struct, enum constant, function or variable) appears in it.
Call graph (from nm: which object defines a symbol another one uses):
  - backends/net/ calls no backend;
  - between the files of one folder (core/, core/algo/, hostfile/, each folder of backends/, and
    of the tether command) there is no call cycle, except in backends/tcp/ between
    the engine's two halves, engine.c (sends, requests) and engine_rx.c (reading, matching): what
    is read queues its replies and the chunks it passes on, and a send or test reads what came. The
    lanes of a pair with several links (engine_lane.c) and what they write and break through are
    beneath both;
  - the helpers the engines call for routing and the memory path (tcp/cma.c, tcp/route.c,
    rdma/route.c) call nothing of their backend: they return what to do.
Each broken rule is printed with the files involved; the exit status is 1 if any broke."""
import os
import re
import subprocess
import sys

SRC, OBJLIST = sys.argv[1], sys.argv[2]
BACKENDS = os.path.join(SRC, "backends")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def rel(path):
    return os.path.relpath(path, SRC)


# ---- include graph ----
files = []
TOOLS = ("cli", "launcher", "config_tool", "bench", "tools")
for top in ("core", "hostfile", "backends") + TOOLS:
    for root, _, names in os.walk(os.path.join(SRC, top)):
        files += [os.path.join(root, n) for n in names if n.endswith((".c", ".h"))]
includes = {}  # file (relative to SRC) -> included files (relative to SRC, when found)
for f in files:
    with open(f, encoding="utf-8") as fh:
        text = fh.read()
    got = []
    for inc in INCLUDE.findall(text):
        here = os.path.join(os.path.dirname(f), inc)
        target = here if os.path.exists(here) else os.path.join(SRC, inc)
        if os.path.exists(target):
            got.append(rel(os.path.normpath(target)))
    includes[rel(f)] = got


def backend_of(path):  # "backends/tcp/engine.c" -> "tcp"; None outside backends/<dir>/
    parts = path.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "backends" else None


# The engine's private headers: engine_impl.h and one per file (engine_rx.h, ...), every
# backends/tcp/engine*.h but engine.h, its face for mesh and ring.
ENGINE_PRIVATE = {f for f in includes if re.fullmatch(r"backends/tcp/engine_\w+\.h", f)}
for f, incs in sorted(includes.items()):
    mine = backend_of(f)
    for inc in incs:
        theirs = backend_of(inc)
        if theirs is None or theirs == mine:
            continue
        if mine == "net":
            fail(f"{f} includes {inc}: backends/net/ is shared by every backend and includes none")
        if inc.endswith("_impl.h"):
            fail(f"{f} includes {inc}, the private header of backends/{theirs}/")
        if {mine, theirs} == {"tcp", "rdma"}:
            fail(f"{f} includes {inc}: tcp/ and rdma/ share only backends/net/")
    for inc in incs:
        if inc in ENGINE_PRIVATE and not (
            f.startswith("backends/tcp/engine") and f.endswith(".c") or f in ENGINE_PRIVATE
        ):
            fail(f"{f} includes {inc}, which is the engine's own (tcp/engine*.c)")


top_of = lambda path: path.split("/")[0]
SIDEWAYS = {("tools", t) for t in TOOLS if t != "tools"} | {("launcher", "config_tool"),
                                                           ("config_tool", "launcher")}
for f, incs in sorted(includes.items()):
    for inc in incs:
        if (top_of(f), top_of(inc)) in SIDEWAYS:
            fail(f"{f} includes {inc}: tools/ is beneath the subcommands, which share only it")


# A header of launcher/ or config_tool/ includes only what it uses (one header per concern).
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
DECLARED = [
    re.compile(r"^\s*#\s*define\s+(\w+)", re.M),  # macros
    re.compile(r"\b(?:struct|union|enum)\s+(\w+)"),  # tags
    re.compile(r"}\s*(\w+)\s*;"),  # typedef struct {...} name;
    re.compile(r"\btypedef\b[^;{}()]*?\b(\w+)\s*;"),  # typedef T name;
    re.compile(r"\btypedef\b[^;]*?\(\s*\*\s*(\w+)\s*\)\s*\("),  # typedef R (*name)(...);
    re.compile(r"^(?!typedef\b)[A-Za-z_][^#;{}()=]*?\b(\w+)\s*\(", re.M),  # functions
    re.compile(r"^extern\b[^;(]*?\b(\w+)\s*;", re.M),  # variables
]
ENUM_BODY = re.compile(r"\benum\b[^{;]*{([^}]*)}")
C_WORDS = set("""char short int long float double signed unsigned void const volatile static inline
extern typedef struct union enum if else while for do switch return sizeof""".split())


def declared(path):
    with open(os.path.join(SRC, path), encoding="utf-8") as fh:
        text = COMMENT.sub(" ", fh.read())
    names = {m for rx in DECLARED for m in rx.findall(text)}
    for body in ENUM_BODY.findall(text):
        names |= set(re.findall(r"(?:^|,)\s*([A-Za-z_]\w*)", body))
    guard = re.search(r"^\s*#\s*ifndef\s+(\w+)", text, re.M)  # the include guard declares nothing
    return names - {guard.group(1) if guard else None} - C_WORDS


for f, incs in sorted(includes.items()):
    if top_of(f) not in ("launcher", "config_tool") or not f.endswith(".h"):
        continue
    with open(os.path.join(SRC, f), encoding="utf-8") as fh:
        body = INCLUDE.sub(" ", COMMENT.sub(" ", fh.read()))
    words = set(re.findall(r"\w+", body))
    for inc in incs:
        if not words & declared(inc):
            fail(f"{f} includes {inc} and uses nothing it declares")


def cycles(graph):
    """Every cycle's nodes, as lists (one per strongly connected component larger than one)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                out.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


for comp in cycles(includes):
    fail("include cycle: " + " -> ".join(comp))


# Within a folder, a .c and its .h are one module, and the modules include no circle either: a.c
# including b.h while b.c includes a.h is a knot the header graph alone does not show. In the TCP
# engine the two halves, engine.c (its header engine_core.h) and engine_rx.c, are one module, as in
# the call graph below; engine.h, the face that mesh and ring call, is declared there but
# implemented across the engine's files (engine_open.c, engine_wait.c, ...), so it is a module
# of its own, beneath them all.
ENGINE_HALVES = {"backends/tcp/engine.c", "backends/tcp/engine_core.h", "backends/tcp/engine_rx.c",
                 "backends/tcp/engine_rx.h"}


def module(path):
    if path in ENGINE_HALVES:
        return "backends/tcp/engine.c+engine_rx.c"
    return path if path == "backends/tcp/engine.h" else os.path.splitext(path)[0]


modules = {}
for f, incs in includes.items():
    modules.setdefault(module(f), set()).update(
        module(i) for i in incs if os.path.dirname(i) == os.path.dirname(f) and module(i) != module(f))
for comp in cycles(modules):
    fail("include circle between the modules of " + os.path.dirname(comp[0]) + "/: "
         + " -> ".join(os.path.basename(m) for m in comp))

# ---- call graph ----
with open(OBJLIST, encoding="utf-8") as fh:
    objects = [line.strip() for line in fh if line.strip()]


def source_of(obj):  # .../tether_objs.dir/backends/tcp/engine.c.o -> backends/tcp/engine.c (CMake)
    m = re.search(r"\.dir/((?:backends|core|hostfile|cli|launcher|config_tool|bench|tools)/.*\.c)"
                  r"\.o(bj)?$", obj.replace("\\", "/"))
    return m.group(1) if m else None


# One nm for every object (it heads each one's symbols with "PATH:"): an nm each took 20 s, not 0.4.
srcs = {obj: source_of(obj) for obj in objects if source_of(obj)}
defined, used = {}, {src: set() for src in srcs.values()}
out = subprocess.run(["nm", *srcs], capture_output=True, text=True, check=True).stdout if srcs else ""
src = next(iter(srcs.values())) if len(srcs) == 1 else None  # one object: no heading
for line in out.splitlines():
    if line.endswith(":") and line[:-1] in srcs:
        src = srcs[line[:-1]]
        continue
    parts = line.split()
    if len(parts) == 2 and parts[0] == "U":
        used[src].add(parts[1])
    elif len(parts) == 3 and parts[1] in "TDBR":
        defined[parts[2]] = src
if not any(s.startswith("backends/tcp/") for s in used):
    fail(f"no object of backends/tcp/ in {OBJLIST}: the call graph was not checked")

calls = {s: {defined[u] for u in us if u in defined and defined[u] != s} for s, us in used.items()}
for src, callees in sorted(calls.items()):
    if src.startswith("backends/net/"):
        for c in sorted(callees):
            if c.startswith("backends/") and not c.startswith("backends/net/"):
                fail(f"{src} calls into {c}: backends/net/ calls no backend")
    if src in ("backends/tcp/cma.c", "backends/tcp/route.c", "backends/rdma/route.c"):
        for c in sorted(callees):
            if backend_of(c) == backend_of(src):
                fail(f"{src} calls {c}: the engine's helpers return what to do, never call it")

for src, callees in sorted(calls.items()):
    for c in sorted(callees):
        if (top_of(src), top_of(c)) in SIDEWAYS:
            fail(f"{src} calls into {c}: tools/ is beneath the subcommands, which share only it")
if not any(s.startswith("launcher/") for s in used):
    fail(f"no object of launcher/ in {OBJLIST}: the tether command was not checked")

# per folder; tcp/'s engine halves count as one node, any other cycle is a knot
HALVES = {"backends/tcp/engine.c", "backends/tcp/engine_rx.c"}
node = lambda s: "backends/tcp/engine.c+engine_rx.c" if s in HALVES else s
folder_of = os.path.dirname
for folder in sorted({folder_of(s) for s in calls}):
    graph = {}
    for src, callees in calls.items():
        if folder_of(src) == folder:
            graph.setdefault(node(src), set()).update(
                node(c) for c in callees if folder_of(c) == folder and node(c) != node(src))
    for comp in cycles(graph):
        fail(f"call cycle between files of {folder}/: " + " <-> ".join(comp))

print(f"layers: {len(includes)} files, {len(used)} objects checked: "
      f"{'OK' if not failures else str(len(failures)) + ' rule(s) broken'}")
sys.exit(1 if failures else 0)
