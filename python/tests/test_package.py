"""Finding libtether and the tether command, and `python -m tether`. No collectives here."""

import os
import shutil
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


def _built():
    """The build's library and command (ctest sets both), or skip."""
    lib, command = os.environ.get("TETHER_LIBRARY"), os.environ.get("TETHER_TEST_BIN")
    if not lib or not command:
        pytest.skip("TETHER_LIBRARY and TETHER_TEST_BIN are set by the ctest registration only")
    return lib, command


def _copy_package(dest):
    """This package's sources into dest/tether, as a checkout or a site-packages would hold them."""
    shutil.copytree(os.path.dirname(tether.__file__), os.path.join(dest, "tether"),
                    ignore=shutil.ignore_patterns("__pycache__", "libtether*", "tether"))


def _run_without_settings(pythonpath, code, path=""):
    env = {k: v for k, v in os.environ.items() if k not in ("TETHER_LIBRARY", "TETHER_BIN")}
    env.update(PYTHONPATH=str(pythonpath), PATH=path or "/usr/bin:/bin")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env, cwd="/")


def test_found_in_the_checkouts_build_tree(tmp_path):
    """PYTHONPATH=python in a checkout: the checkout's build folder, no TETHER_LIBRARY."""
    lib, command = _built()
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "tether.h").write_text("")
    _copy_package(tmp_path / "python")
    for name in ("build-asan", "build"):  # "build" is preferred over the others
        (tmp_path / name).mkdir()
        (tmp_path / name / "CMakeCache.txt").write_text("")
    shutil.copy(lib, tmp_path / "build" / "libtether.so.0")
    shutil.copy(command, tmp_path / "build" / "tether")
    child = _run_without_settings(
        tmp_path / "python", "import tether, tether.__main__ as m; print(tether.init().size(), "
        "tether._lib.path(), m.find_command())")
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == ["1", str(tmp_path / "build" / "libtether.so.0"),
                                    str(tmp_path / "build" / "tether")]


def test_found_in_the_install_prefix_of_the_command(tmp_path):
    """An install: bin/tether on PATH, lib/libtether beside it; the package elsewhere."""
    lib, command = _built()
    _copy_package(tmp_path / "site")
    (tmp_path / "prefix" / "bin").mkdir(parents=True)
    (tmp_path / "prefix" / "lib").mkdir()
    shutil.copy(command, tmp_path / "prefix" / "bin" / "tether")
    shutil.copy(lib, tmp_path / "prefix" / "lib" / "libtether.so.0")
    child = _run_without_settings(tmp_path / "site", "import tether; print(tether._lib.path())",
                                  path=f"{tmp_path / 'prefix' / 'bin'}:/usr/bin:/bin")
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == str(tmp_path / "prefix" / "lib" / "libtether.so.0")


def test_pip_install_carries_the_library(tmp_path):
    """pip install ./python after a build: the installed package needs no settings, and
    `python -m tether` finds the command it carries."""
    lib, _ = _built()
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(tether.__file__))))
    venv = tmp_path / "venv"
    if subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                      capture_output=True).returncode != 0:
        pytest.skip("python3 -m venv is not available")
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                          "--no-build-isolation", "--no-deps", "--no-index", os.path.join(src, "python")],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TETHER_BUILD_DIR": os.path.dirname(lib)},
                         cwd=str(tmp_path))
    assert pip.returncode == 0, pip.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("TETHER_LIBRARY", "PYTHONPATH")}
    child = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import tether; print(tether._lib.path())"], capture_output=True,
                           text=True, timeout=60, env={**env, "PATH": "/usr/bin:/bin"}, cwd="/")
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip().startswith(str(venv)), child.stdout
    version = subprocess.run([str(venv / "bin" / "python"), "-m", "tether", "--version"],
                             capture_output=True, text=True, timeout=60,
                             env={**env, "PATH": "/usr/bin:/bin"}, cwd="/")
    assert version.returncode == 0 and version.stdout.startswith("tether "), version.stderr


def test_dtype_and_op_codes_come_from_the_library():
    """The package's tables are the library's names (numpy's spelling), each dtype's size the
    library's: nothing copied by position from include/tether.h."""
    from tether import _dtypes, collectives
    lib = _lib.get()
    codes = _dtypes.codes()
    assert len(codes) >= 13 and len(set(codes.values())) == len(codes)
    for dtype, code in codes.items():
        assert lib.tether_dtype_name(code).decode() == dtype.name
        assert lib.tether_dtype_size(code) == dtype.itemsize
    assert lib.tether_dtype_name(-1) is None and lib.tether_dtype_name(len(codes) + 1) is None
    assert sorted(collectives.ops()) == ["max", "min", "prod", "sum"]
    assert [lib.tether_op_name(c).decode() for c in sorted(collectives.ops().values())] == \
        [n for n, _ in sorted(collectives.ops().items(), key=lambda kv: kv[1])]
