"""The exception raised when a C call fails, and the check every wrapper runs on a status code."""

from . import _lib


class TetherError(RuntimeError):
    """A tether call returned a failure status.

    Attributes:
        status: the negative TETHER_E* code (e.g. -7).
        name: its name, e.g. "TETHER_EMISMATCH".
        detail: tether_last_error()'s text, which names the file, field, peer or errno at fault.

    After TETHER_ENET, TETHER_ETIMEDOUT, TETHER_EPEER, TETHER_EMISMATCH or TETHER_EDEADLOCK (live
    ranks waiting on each other: detail names the cycle) the group is broken and every later call
    on it raises the same error; TETHER_EINVAL leaves the group usable.
    """

    def __init__(self, status, name, summary, detail):
        self.status = status
        self.name = name
        self.summary = summary
        self.detail = detail
        super().__init__(f"{name}: {detail or summary}")


def check(status):
    """Raise TetherError for a failure status; the detail must be read now, on this thread,
    because tether_last_error() is thread-local and cleared by the next call."""
    if status >= 0:
        return status
    lib = _lib.get()
    raise TetherError(status, lib.tether_err_name(status).decode(),
                      lib.tether_strerror(status).decode(),
                      (lib.tether_last_error() or b"").decode(errors="replace"))
