"""Finding and loading libtether, and the ctypes prototypes of the C API (include/tether.h).

The library is looked up in this order, and the first that loads wins:

1. ``TETHER_LIBRARY``: an explicit path. It comes first because setting it is a deliberate choice
   (a debug build, a test run against the build tree); if it is set but fails, that is an error and
   nothing else is tried, so a typo never silently picks up another copy.
2. Next to the package: ``libtether.so`` (or ``.dylib``) copied into the package folder (``pip
   install ./python`` after a build copies it there).
3. The build trees of the source checkout the package is in (``build*/`` beside ``python/``, the
   one named ``build`` first), so ``PYTHONPATH=python`` works in a checkout without settings.
4. Where the ``tether`` command on PATH is: beside it (a build tree) or in ``../lib`` (an install).
5. The lib folder of this Python's prefix and of the usual install prefixes (``/usr/local``,
   ``/opt/homebrew`` on macOS), which ``cmake --install`` uses and a fresh ld.so cache may lack.
6. The system library path (``LD_LIBRARY_PATH``, ld.so.cache, ``/usr/lib`` ...), through dlopen.

When none loads, :class:`LibraryNotFoundError` lists every place tried and why each failed.
The tether command (``python -m tether``) is looked up in the same folders.
"""

import ctypes
import glob
import os
import shutil
import sys
import threading

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))

# File names of the shared library, most specific first (SOVERSION 0, see CMakeLists.txt).
if sys.platform == "darwin":
    _NAMES = ("libtether.0.dylib", "libtether.dylib")
    _PREFIXES = ("/usr/local", "/opt/homebrew")
else:
    _NAMES = ("libtether.so.0", "libtether.so")
    _PREFIXES = ("/usr/local",)


class LibraryNotFoundError(OSError):
    """libtether could not be loaded; the message lists every place tried."""


def _build_trees(pkg_dir):
    """Build folders (with a CMakeCache.txt) of the checkout holding python/<pkg>, "build" first."""
    root = os.path.dirname(os.path.dirname(pkg_dir))
    if not os.path.isfile(os.path.join(root, "include", "tether.h")):
        return []
    trees = sorted(glob.glob(os.path.join(root, "build*")),
                   key=lambda d: (os.path.basename(d) != "build", d))
    return [d for d in trees if os.path.isfile(os.path.join(d, "CMakeCache.txt"))]


def search_dirs(environ=None, pkg_dir=_PKG_DIR):
    """The folders libtether and the tether command are looked for in, as (where, folder) pairs,
    in order (items 2 to 5 of the module docstring)."""
    environ = os.environ if environ is None else environ
    dirs = [("next to the package", pkg_dir)]
    dirs += [("build tree", d) for d in _build_trees(pkg_dir)]
    command = shutil.which("tether", path=environ.get("PATH", ""))
    if command:
        bindir = os.path.dirname(os.path.realpath(command))
        dirs += [("beside the tether command", bindir),
                 ("tether command's prefix", os.path.join(os.path.dirname(bindir), "lib"))]
    prefixes = [sys.prefix] + [p for p in _PREFIXES if p != sys.prefix]
    dirs += [("install prefix", os.path.join(p, "lib")) for p in prefixes]
    seen, unique = set(), []
    for where, folder in dirs:
        if folder not in seen:
            seen.add(folder)
            unique.append((where, folder))
    return unique


def candidates(environ=None, pkg_dir=_PKG_DIR):
    """The places to try, in order, as (where, path-or-name) pairs.

    With TETHER_LIBRARY set, only that path is returned (see the module docstring).
    """
    environ = os.environ if environ is None else environ
    explicit = environ.get("TETHER_LIBRARY")
    if explicit:
        return [("TETHER_LIBRARY", explicit)]
    found = []
    for where, folder in search_dirs(environ, pkg_dir):
        # Only files that are there: the error message then lists what was really tried.
        found += [(where, os.path.join(folder, name)) for name in _NAMES
                  if where == "next to the package" or os.path.exists(os.path.join(folder, name))]
    found += [("system library path", name) for name in _NAMES]
    return found


def load(places):
    """dlopen the first loadable entry of places; returns (CDLL, path-or-name).

    Raises LibraryNotFoundError naming each place and the loader's reason.
    """
    reasons = []
    for where, path in places:
        # A path that is not there gives a plain reason instead of dlopen's longer text.
        if os.sep in path and not os.path.exists(path):
            reasons.append(f"  {where}: {path}: no such file")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as exc:
            reasons.append(f"  {where}: {path}: {exc}")
    raise LibraryNotFoundError(
        "cannot load libtether; tried:\n" + "\n".join(reasons) + "\n"
        "Build it (cmake --build build) in this checkout, install it (cmake --install build), "
        "or set TETHER_LIBRARY to its path.")


# ctypes signatures, one row per exported function: name -> (restype, argtypes).
_P = ctypes.c_void_p
_SIZE = ctypes.c_size_t
_INT = ctypes.c_int
_STR = ctypes.c_char_p
_SIGNATURES = {
    "tether_init": (_INT, [_STR, _INT, ctypes.POINTER(_P)]),
    "tether_is_available": (_INT, [_STR]),
    "tether_group_rank": (_INT, [_P]),
    "tether_group_size": (_INT, [_P]),
    "tether_group_backend": (_STR, [_P]),
    "tether_group_split": (_INT, [_P, _INT, _INT, ctypes.POINTER(_P)]),
    "tether_group_free": (None, [_P]),
    "tether_dtype_size": (_SIZE, [_INT]),
    "tether_dtype_name": (_STR, [_INT]),
    "tether_op_name": (_STR, [_INT]),
    "tether_strerror": (_STR, [_INT]),
    "tether_err_name": (_STR, [_INT]),
    "tether_last_error": (_STR, []),
    "tether_all_reduce": (_INT, [_P, _P, _P, _SIZE, _INT, _INT]),
    "tether_all_gather": (_INT, [_P, _P, _P, _SIZE, _INT]),
    "tether_reduce_scatter": (_INT, [_P, _P, _P, _SIZE, _INT, _INT]),
    "tether_broadcast": (_INT, [_P, _P, _SIZE, _INT, _INT]),
    "tether_all_to_all": (_INT, [_P, _P, _P, _SIZE, _INT]),
    "tether_send": (_INT, [_P, _P, _SIZE, _INT, _INT]),
    "tether_recv": (_INT, [_P, _P, _SIZE, _INT, _INT]),
    "tether_recv_from": (_INT, [_P, _P, _SIZE, _INT, _INT, ctypes.POINTER(_INT)]),
    "tether_barrier": (_INT, [_P]),
}

_lock = threading.Lock()
_loaded = None  # (CDLL, path) once loaded


def _declare(lib):
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def get():
    """The loaded library with its prototypes declared; loads it on first use.

    Loading is lazy so that ``import tether`` works (for ``python -m tether`` and for docs) on a
    machine where only the command is installed.
    """
    global _loaded
    if _loaded is not None:  # every call passes here: skip the lock once loaded
        return _loaded[0]
    with _lock:
        if _loaded is None:
            lib, path = load(candidates())
            _declare(lib)
            _loaded = (lib, path)
        return _loaded[0]


def names(fn):
    """{name: code} of an enum the library names, asking fn(code) from 0 until it answers NULL
    (tether_dtype_name, tether_op_name): the codes come from the library, never by position."""
    table, code = {}, 0
    while (name := fn(code)) is not None:
        table[name.decode()] = code
        code += 1
    return table


def path():
    """Where the loaded library came from (a path, or a bare name found on the system path)."""
    get()
    return _loaded[1]
