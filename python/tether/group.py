"""Groups of ranks: tether.init(), Group, and the default group collectives fall back to."""

import ctypes
import threading
import weakref

from . import _lib
from ._args import c_int
from .errors import check

_default = None            # the first group init() formed; group=None means this one
_default_lock = threading.Lock()


class Group:
    """A set of ranks that run collectives together (a wrapper of tether_group).

    Made by :func:`init` or :meth:`split`, not directly. The C group is freed by :meth:`close`,
    on leaving a ``with`` block, or when the object is garbage collected. A group is used by one
    thread at a time; different groups may be used from different threads. A group belongs to the
    process that formed it: in a child made by os.fork() its collectives raise TetherError
    (TETHER_EINVAL, naming the fork), and closing it there, or its finalizer at the child's exit,
    leaves the parent's connections open (include/tether.h, tether_group_free).
    """

    def __init__(self, handle):
        self._handle = handle
        lib = _lib.get()
        self._rank = lib.tether_group_rank(handle)
        self._size = lib.tether_group_size(handle)
        self._backend = lib.tether_group_backend(handle).decode()
        # finalize, not __del__: it also runs at interpreter exit, and at most once.
        self._free = weakref.finalize(self, lib.tether_group_free, handle)

    def rank(self):
        """This process's rank in the group, 0..size()-1."""
        return self._rank

    def size(self):
        """The number of ranks in the group."""
        return self._size

    @property
    def backend(self):
        """The transport the group runs on: "mpi", "mesh", "ring", "rdma" or "singleton"."""
        return self._backend

    @property
    def closed(self):
        """True once close() has freed the C group."""
        return not self._free.alive

    @property
    def handle(self):
        """The tether_group* as an int, for passing to C code; ValueError once closed."""
        if self.closed:
            raise ValueError("this tether Group is closed")
        return self._handle

    def split(self, color, key=-1):
        """Collective: ranks passing the same color form a new group, ordered by key, then by
        rank here (key < 0 keeps this group's order). Every rank of this group must call it.
        A rank passing a negative color (-1, as MPI_UNDEFINED) joins no group and gets None.
        color and key must fit a C int (ValueError otherwise)."""
        color = c_int(color, "split", "color")
        key = c_int(key, "split", "key")
        out = ctypes.c_void_p()
        check(_lib.get().tether_group_split(self.handle, color, key, ctypes.byref(out)))
        return None if out.value is None else Group(out.value)

    def close(self):
        """Free the C group now (idempotent). Groups split from it stay usable."""
        self._free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = ", closed" if self.closed else ""
        return f"<tether.Group rank {self._rank} of {self._size} ({self._backend}{state})>"


def init(strict=False, backend="any"):
    """Join the job this process was launched in and return its world group.

    As mx.distributed.init(strict=False, backend="any"). backend: "any", "mpi", "ring", "mesh",
    "rdma" (MLX's "jaccl" and "jaccl-ring" mean rdma) or "singleton" (TETHER_BACKEND in the
    environment replaces "any"; under mpirun "any" is "mpi", docs/mpi.md; under "any", MLX's
    variables choose as in MLX: docs/migrating.md). Without any configuration in the environment
    the group has size 1, or TetherError(TETHER_EUNAVAIL) when strict; a job announced by rank and
    size variables with no hostfile or coordinator raises TetherError(TETHER_ECONFIG) naming what
    is missing (docs/guide.md, "Starting ranks"). As in mx.distributed, the
    first group formed becomes the default one: init() / init(backend="any") then return it
    again, and collectives called without group= use it.

    A string first argument is taken as the backend (init("ring"), as earlier versions of this
    package had it), so both orders work.
    """
    global _default
    if isinstance(strict, str):
        strict, backend = False, strict
    if not isinstance(backend, str):
        raise TypeError(f"init: backend must be a string such as \"any\" or \"ring\", "
                        f"got {backend!r}")
    with _default_lock:
        # A strict call must not be answered with a size-1 default formed by a lax one.
        reusable = _default is not None and not _default.closed and not (
            strict and _default.backend == "singleton")
        if backend == "any" and reusable:
            return _default
        out = ctypes.c_void_p()
        check(_lib.get().tether_init(backend.encode(), int(bool(strict)), ctypes.byref(out)))
        group = Group(out.value)
        if _default is None or _default.closed:
            _default = group
        return group


def is_available(backend="any"):
    """True if the named backend could form a group here ("singleton" always can; "any", the
    default as in mx.distributed.is_available(), asks whether some backend is configured; None
    means "any", as NULL does in C)."""
    if backend is not None and not isinstance(backend, str):
        raise TypeError(f"is_available: backend must be a string such as \"any\" or \"ring\", "
                        f"or None, got {backend!r}")
    return bool(_lib.get().tether_is_available(None if backend is None else backend.encode()))


def resolve(group):
    """group, or the default group (forming it with init() the first time) when None."""
    if group is not None:
        return group
    default = _default  # every collective passes here: skip init()'s lock when it is formed
    return default if default is not None and not default.closed else init()
