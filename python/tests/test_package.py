"""Finding libtether and the tether command, and `python -m tether`. No collectives here."""

import os
import subprocess
import sys

import pytest

import tether
from tether import _lib
from tether.__main__ import find_command


def run_python(code_or_args, **env):
    """Run this interpreter in a child with env added; returns the CompletedProcess."""
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else code_or_args
    return subprocess.run([sys.executable] + args, capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})


def test_candidates_order():
    places = _lib.candidates(environ={}, pkg_dir="/pkg")
    assert [where for where, _ in places] == ["next to the package"] * 2 + \
        ["system library path"] * 2
    assert places[0][1].startswith("/pkg/libtether")
    assert _lib.candidates(environ={"TETHER_LIBRARY": "/x/libtether.so"}) == \
        [("TETHER_LIBRARY", "/x/libtether.so")]


def test_load_error_lists_every_place(tmp_path):
    not_a_library = tmp_path / "libtether.so"
    not_a_library.write_text("not an ELF file")
    with pytest.raises(tether.LibraryNotFoundError) as err:
        _lib.load([("here", str(tmp_path / "missing.so")), ("there", str(not_a_library)),
                   ("system library path", "libtether-does-not-exist.so")])
    text = str(err.value)
    assert "here: " + str(tmp_path / "missing.so") + ": no such file" in text
    assert "there: " + str(not_a_library) in text
    assert "libtether-does-not-exist.so" in text and "TETHER_LIBRARY" in text


def test_bad_tether_library_is_an_error_not_a_fallback():
    child = run_python("import tether; tether.init()", TETHER_LIBRARY="/nonexistent/libtether.so")
    assert child.returncode != 0
    assert "LibraryNotFoundError" in child.stderr
    assert "TETHER_LIBRARY: /nonexistent/libtether.so: no such file" in child.stderr


def test_import_does_not_need_the_library():
    child = run_python("import tether; print(tether.__version__)",
                       TETHER_LIBRARY="/nonexistent/libtether.so")
    assert child.returncode == 0 and child.stdout.strip() == tether.__version__


def test_python_m_tether_execs_the_command():
    child = run_python(["-m", "tether", "launch", "-n", "2", "--", "prog"], TETHER_BIN="/bin/echo")
    assert child.returncode == 0 and child.stdout == "launch -n 2 -- prog\n"
    child = run_python(["-m", "tether", "x"], TETHER_BIN="/bin/false")
    assert child.returncode == 1  # the command's status passes through


def test_python_m_tether_missing_command():
    child = run_python(["-m", "tether", "check"], TETHER_BIN="/nonexistent/tether")
    assert child.returncode == 2 and "TETHER_BIN=/nonexistent/tether" in child.stderr


def test_command_found_next_to_library():
    """ctest sets TETHER_LIBRARY to the build's libtether and TETHER_TEST_BIN to its command,
    which the build puts in the same folder."""
    expected = os.environ.get("TETHER_TEST_BIN")
    if not expected:
        pytest.skip("TETHER_TEST_BIN is set by the ctest registration only")
    assert find_command(environ={"PATH": ""}) == expected
