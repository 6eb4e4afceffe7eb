#!/usr/bin/env python3
"""tests/docs/env_names.py - every TETHER_* environment variable the sources name is a row of
core/env.c's table and is documented in docs/env.md, and the C sources outside tests/ call getenv
nowhere but in core/env.c: libtether's settings are read through the accessor of the table
(tether__param_*, core/params.h), any other variable through tether__env_raw beside it.

And the names are written once, in that table: a C or C++ string literal of the tree's programs
(anything but tests/ and lab/) that names a variable of the table, or one of its aliases (MLX's,
mccl's, torchrun's), is an error outside core/env.c: code that sets a variable and a message that
names one take the name from its row (TETHER__VAR, TETHER__ALIAS, TETHER__VARS: core/params.h).
Two kinds of text may name them, as docs/ does: a command's usage text (a string constant whose
name says usage) and a shell script carried in a string, which reads its variable as $NAME.

Usage: env_names.py SOURCE_DIR. Exit 1 naming each variable missing from either, with a file that
names it, and each stray getenv.

What counts as a variable, by file kind (a name the public header defines, such as a status code,
a dtype or TETHER_VERSION_STRING, never does, so python's "TETHER_EINVAL" is no variable):
  C and C++: a string literal that starts with the name ("TETHER_X" or "TETHER_X=..."), as getenv,
    setenv and messages spell it, or $TETHER_X / ${TETHER_X inside one (a shell
    script carried in a string). Macros, enum constants and header guards are never quoted.
  Python: a quoted name ('TETHER_X', "TETHER_X", or "TETHER_X=..."): os.environ and env dicts.
  Shell (*.sh, or a file whose first line is a #! naming a shell): $TETHER_X, ${TETHER_X..., and
    TETHER_X=... where a command, `export` or `--env` could take it.
  CMake (CMakeLists.txt, *.cmake): $ENV{TETHER_X}, TETHER_X=... in a test's ENVIRONMENT list,
    after `cmake -E env` or --env; cache options (-DTETHER_RDMA=OFF, "TETHER_RDMA=ON but ...")
    are not environment variables.
"""
import os
import re
import subprocess
import sys

NAME = r"(TETHER_[A-Z0-9_]+)"
C_RX = re.compile(r'"' + NAME + r'(?=["=])|\$\{?' + NAME)
PY_RX = re.compile(r"""["']""" + NAME + r"""(?=["'=])""")
SH_RX = re.compile(r"\$\{?" + NAME + r"|(?:^|[\s;&|`])(?:export\s+|--env\s+)?" + NAME + "=", re.M)
CMAKE_RX = re.compile(r"\$ENV\{" + NAME + r"\}|(?:ENVIRONMENT\s+\"?|;|\benv\s+|--env\s+)" + NAME + "=")
# Folders of build outputs, when there is no git to list the tracked files.
SKIP_DIRS = ("build", ".git", "node_modules")
STRAY_READ_RX = re.compile(r'\b(?:secure_)?getenv\s*\(')
# The one file that may call getenv, and programs built apart from libtether (lab/drivers: MPI
# programs compiled by mpicc for lab/compare, reading their own knobs).
GETENV_OK = ("core/env.c", "lab/drivers/")


def source_files(src):
    try:
        out = subprocess.run(["git", "-C", src, "ls-files"], capture_output=True, text=True,
                             check=True).stdout
        return [f for f in out.splitlines() if os.path.isfile(os.path.join(src, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for root, dirs, names in os.walk(src):
            dirs[:] = [d for d in dirs if not d.startswith(SKIP_DIRS)]
            files += [os.path.relpath(os.path.join(root, n), src) for n in names]
        return files


def pattern_for(path, text):
    base, ext = os.path.basename(path), os.path.splitext(path)[1]
    if ext in (".c", ".h", ".cpp", ".cc", ".hpp", ".m"):
        return C_RX
    if ext == ".py":
        return PY_RX
    if base == "CMakeLists.txt" or ext == ".cmake":
        return CMAKE_RX
    first = text.split("\n", 1)[0]
    if ext == ".sh" or (first.startswith("#!") and re.search(r"\b(ba|da|z)?sh\b", first)):
        return SH_RX
    return None


def header_identifiers(src):
    """Every TETHER_ name include/tether.h defines: outside its comments, plus the status list."""
    text = open(os.path.join(src, "include", "tether.h"), encoding="utf-8").read()
    code = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    names = set(re.findall(NAME, code))
    names |= {"TETHER_" + n for n in re.findall(r"\bX\((\w+),", code)}
    return names


LITERAL_RX = re.compile(r'"(?:[^"\\\n]|\\.)*"')
COMMENT_RX = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
CHAR_RX = re.compile(r"'(?:[^'\\\n]|\\.)*'")
# a usage text: static const char usage_text[] = "..." "...";  or  *const usage = ...;
USAGE_RX = re.compile(r"\bconst\s+char\s+(?:\*\s*const\s+)?\w*usage\w*\s*(?:\[\])?\s*=\s*"
                      r'(?:"(?:[^"\\\n]|\\.)*"\s*)+;')


def blank(m):
    """The match with every character but newlines made a space: line numbers stay right."""
    return re.sub(r"[^\n]", " ", m.group())


def table_names(config):
    """Every name the table's rows read: their variables and their aliases ("A:B" is two)."""
    names = {"TETHER_" + i for i in re.findall(r"^\s*ROW\((\w+),", config, re.M)}
    names |= set(re.findall(r'OTHER\("' + NAME + '"', config))
    for also in re.findall(r"ALSO\(([^)]*)\)", config):
        for alias in re.findall(r'"([^"]+)"', also):
            names |= set(alias.split(":"))
    return names


def names_written_twice(path, text, names):
    """(line, name) for each variable a string literal of a C or C++ file names."""
    code = COMMENT_RX.sub(blank, text)
    code = CHAR_RX.sub(blank, code)
    code = USAGE_RX.sub(blank, code)
    found = []
    for m in LITERAL_RX.finditer(code):
        lit = re.sub(r"\$\{?[A-Z_][A-Z0-9_]*", "", m.group())  # a script's own $NAME reads
        for name in re.findall(r"\b[A-Z][A-Z0-9_]*[A-Z0-9]\b", lit):
            if name in names:
                found.append((code.count("\n", 0, m.start()) + 1, name))
    return found


def main(src):
    api = header_identifiers(src)
    config = open(os.path.join(src, "core", "env.c"), encoding="utf-8").read()
    # libtether's rows are ROW(ID, ...) for TETHER_ID; the rest of the tree's OTHER("TETHER_X", ...)
    table = {"TETHER_" + i for i in re.findall(r"^\s*ROW\((\w+),", config, re.M)}
    table |= set(re.findall(r'OTHER\("' + NAME + '"', config))
    documented = set(re.findall("`" + NAME + "`", open(os.path.join(src, "docs", "env.md"),
                                                        encoding="utf-8").read()))
    every_name = table_names(config)
    found, bad, twice = {}, 0, 0
    me = os.path.realpath(__file__)
    for path in source_files(src):
        if path.endswith(".md") or os.path.realpath(os.path.join(src, path)) == me:
            continue
        try:
            text = open(os.path.join(src, path), encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        rx = pattern_for(path, text)
        if rx is C_RX and path != "core/env.c" and not path.startswith(("tests/", "lab/")):
            for line, name in names_written_twice(path, text, every_name):
                print(f"{path}:{line}: {name}: name it from its row of core/env.c (TETHER__VAR, "
                      "TETHER__ALIAS, TETHER__VARS: core/params.h)")
                bad += 1
                twice += 1
        if rx is C_RX and not path.startswith(("tests/", "python/") + GETENV_OK):
            for m in STRAY_READ_RX.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                print(f"{path}:{line}: getenv: read a setting with tether__param_* (core/params.h), "
                      "another variable with tether__env_raw")
                bad += 1
        for m in rx.finditer(text) if rx else ():
            name = next(g for g in m.groups() if g)
            if name not in api:
                found.setdefault(name, path)
    # The scan itself must work: one name each rule must find, read where only that rule looks.
    for name, where in (("TETHER_TCP_LOCAL_SNDBUF", "C"), ("TETHER_BIN", "Python"),
                        ("TETHER_ZIG", "shell"), ("TETHER_MACOS_PREFIX", "CMake")):
        if name not in found:
            print(f"env_names: the {where} rule found no {name}: the scan is broken")
            return 1
    for name in sorted(found):
        if name not in table:
            print(f"{name} (named in {found[name]}) is not in core/env.c's table")
            bad += 1
        if name not in documented:
            print(f"{name} (named in {found[name]}) is not documented in docs/env.md")
            bad += 1
    # The literal rule must work too: on a sample, it finds the message's name and only that one.
    sample = ('/* TETHER_SIZE */ static const char usage[] = "sets TETHER_SIZE";\n'
              'int f(void) { return fail("TETHER_RANK=%d", \'"\', "${TETHER_SIZE:-1}"); }')
    if names_written_twice("sample.c", sample, every_name) != [(2, "TETHER_RANK")]:
        print("env_names: the literal rule misreads its sample: the scan is broken")
        return 1
    print(f"env_names: {len(found)} TETHER_* variables in the sources, {twice} names written "
          f"outside the table, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
