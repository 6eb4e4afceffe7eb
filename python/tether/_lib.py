"""Finding and loading libtether, and the ctypes prototypes of the C API (include/tether.h).

The library is looked up in this order, and the first that loads wins:

1. ``TETHER_LIBRARY``: an explicit path. It comes first because setting it is a deliberate choice
   (a debug build, a test run against the build tree); if it is set but fails, that is an error and
   nothing else is tried, so a typo never silently picks up another copy.
2. Next to the package: ``libtether.so`` (or ``.dylib``) copied into the package folder.
3. The system library path (``LD_LIBRARY_PATH``, ld.so.cache, ``/usr/lib`` ...), through dlopen.

When none loads, :class:`LibraryNotFoundError` lists every place tried and why each failed.
"""

import ctypes
import os
import sys
import threading

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))

# File names of the shared library, most specific first (SOVERSION 0, see CMakeLists.txt).
if sys.platform == "darwin":
    _NAMES = ("libtether.0.dylib", "libtether.dylib")
else:
    _NAMES = ("libtether.so.0", "libtether.so")


class LibraryNotFoundError(OSError):
    """libtether could not be loaded; the message lists every place tried."""


def candidates(environ=None, pkg_dir=_PKG_DIR):
    """The places to try, in order, as (where, path-or-name) pairs.

    With TETHER_LIBRARY set, only that path is returned (see the module docstring).
    """
    environ = os.environ if environ is None else environ
    explicit = environ.get("TETHER_LIBRARY")
    if explicit:
        return [("TETHER_LIBRARY", explicit)]
    found = [("next to the package", os.path.join(pkg_dir, name)) for name in _NAMES]
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
        "Build it (cmake --build build) and set TETHER_LIBRARY=build/libtether.so, "
        "or install it (cmake --install build).")


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


def path():
    """Where the loaded library came from (a path, or a bare name found on the system path)."""
    get()
    return _loaded[1]
