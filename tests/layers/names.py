#!/usr/bin/env python3
"""tests/layers/names.py - one naming rule, checked on the real tree: the public prefix (tether_,
TETHER_) belongs to what include/tether.h declares, and every other name of the tree takes the
internal one (tether__, TETHER__), so that TETHER_SUM (the API), TETHER__SPIN_INIT (a constant of
core) and TETHER_SPIN_US (a variable of the environment) cannot be taken for one another.

Usage: names.py SOURCE_DIR OBJECT_LIST (a file naming the compiled objects, one a line).

Checked:
  - in the sources outside include/ (tests' too): every macro (include guards aside: they name
    their file), type, struct/enum/union tag and enum constant with the public prefix is one that
    include/tether.h declares;
  - from nm: every symbol the library's and the command's objects define with the public prefix is
    declared in include/tether.h.
Each name that breaks the rule is printed with its file; the exit status is 1 if any did."""
import re
import subprocess
import sys

SRC, OBJLIST = sys.argv[1], sys.argv[2]
PUBLIC = re.compile(r"\b(?:tether|TETHER)_[A-Za-z0-9_]+\b")
INTERNAL = re.compile(r"(?:tether|TETHER)__")


def public_names():
    with open(f"{SRC}/include/tether.h", encoding="utf-8") as f:
        return set(PUBLIC.findall(f.read()))


def internal_with_public_prefix(text):
    """The names text defines (macros, types, tags, enum constants) that have the public prefix."""
    guards = set(re.findall(r"#\s*ifndef\s+(\w+)\s*\n\s*#\s*define\s+\1\b", text))
    found = {n for n in re.findall(r"^\s*#\s*define\s+(TETHER_[A-Za-z0-9_]+)", text, re.M)
             if n not in guards}
    found.update(re.findall(r"\}\s*(tether_[a-z0-9_]+)\s*;", text))
    found.update(re.findall(r"typedef\s+[^;{}]*?\b(tether_[a-z0-9_]+)\s*;", text))
    found.update(re.findall(r"typedef\s+[^;{}]*?\(\s*\*\s*(tether_[a-z0-9_]+)\s*\)", text))
    found.update(re.findall(r"\b(?:enum|struct|union)\s+(tether_[a-z0-9_]+)\b", text))
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", text):
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        found.update(re.findall(r"(?:^|,)\s*(TETHER_[A-Z0-9_]+)\b", body, re.M))
    return {n for n in found if not INTERNAL.match(n)}


def main():
    public = public_names()
    bad = 0
    files = subprocess.check_output(["git", "-C", SRC, "ls-files", "*.c", "*.h", "*.cpp"],
                                    text=True).split()
    for path in files:
        if path.startswith("include/"):
            continue
        with open(f"{SRC}/{path}", encoding="utf-8", errors="replace") as f:
            names = internal_with_public_prefix(f.read()) - public
        for n in sorted(names):
            print(f"FAIL: {path}: {n} has the public prefix but include/tether.h does not declare "
                  f"it: call it {n.replace('_', '__', 1)}")
            bad += 1
    with open(OBJLIST, encoding="utf-8") as f:
        objects = [line.strip() for line in f if line.strip()]
    out = subprocess.run(["nm", "-A", "--defined-only", "-g"] + objects, capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        obj, _, rest = line.partition(": ")
        sym = rest.split()[-1] if rest.split() else ""
        if re.match(r"tether_[a-z0-9]", sym) and sym not in public:
            print(f"FAIL: {obj}: defines {sym}, which has the public prefix but is not in "
                  f"include/tether.h")
            bad += 1
    print(f"names: {len(files)} sources and {len(objects)} objects checked, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
