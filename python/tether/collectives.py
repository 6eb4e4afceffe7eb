"""The collectives and point-to-point calls, as numpy-in, numpy-out functions over the C API.

Every function takes group= (default: the group init() formed first) and, where it makes an
array, out= to write into an existing one instead. stream= is accepted, and ignored, so code
written for mx.distributed (which passes stream=mx.cpu) runs unchanged: numpy arrays are not
lazy, and every call here has finished, on the calling thread, when it returns. Inputs are anything numpy.asarray accepts
through the buffer protocol (numpy arrays, memoryview, array.array, scalars); they are copied
only when not C-contiguous. Failures raise tether.TetherError; every rank of the group must make
the same calls with the same shapes and dtypes, as with any collective library.
"""

import ctypes
import operator

import numpy as np

from . import _lib
from ._args import c_int
from ._dtypes import as_input, as_output, code_of
from .errors import check
from .group import resolve

_ops = None  # {"sum": code, ...}: tether_op by the names reduce_scatter(op=...) takes


def ops():
    """tether_op codes by name, as the library names them (tether_op_name)."""
    global _ops
    if _ops is None:
        _ops = _lib.names(_lib.get().tether_op_name)
    return _ops

# src of a recv that takes the next message from whichever rank sent one: TETHER_ANY_SOURCE of
# include/tether.h (MPI's and mpi4py's ANY_SOURCE). Such a recv returns (array, sender).
ANY_SOURCE = -2
ANY = ANY_SOURCE


def _ptr(arr):
    """The address of arr's first element, for a void* argument."""
    return arr.ctypes.data


def _op_code(op):
    try:
        return ops()[op]
    except KeyError:
        raise ValueError(f"unknown op {op!r}; choose one of {', '.join(ops())}") from None


def _shape(shape):
    """A shape as a tuple; an int n means (n,), as in numpy.empty."""
    try:
        return (operator.index(shape),)
    except TypeError:
        return tuple(shape)


def _blocks(arr, size, what):
    """Elements per rank when arr's first axis is cut into size equal blocks (sum_scatter,
    all_to_all): a ValueError unless it divides evenly, as in mx.distributed."""
    if arr.ndim == 0 or arr.shape[0] % size:
        raise ValueError(f"{what} needs an array whose first axis divides by the group size "
                         f"{size}; got shape {arr.shape}")
    return arr.size // size


def _all_reduce(x, op, group, out):
    g = resolve(group)
    send = as_input(x)
    recv = as_output(out, send.shape, send.dtype)
    check(_lib.get().tether_all_reduce(g.handle, _ptr(send), _ptr(recv), send.size,
                                       code_of(send.dtype), op))
    return recv


def all_sum(x, *, group=None, stream=None, out=None):
    """Element-wise sum of x over every rank; every rank gets the result. out=x works in place."""
    return _all_reduce(x, _op_code("sum"), group, out)


def all_prod(x, *, group=None, stream=None, out=None):
    """Element-wise product of x over every rank (logical and for bool)."""
    return _all_reduce(x, _op_code("prod"), group, out)


def all_max(x, *, group=None, stream=None, out=None):
    """Element-wise maximum of x over every rank (logical or for bool; not for complex)."""
    return _all_reduce(x, _op_code("max"), group, out)


def all_min(x, *, group=None, stream=None, out=None):
    """Element-wise minimum of x over every rank (logical and for bool; not for complex)."""
    return _all_reduce(x, _op_code("min"), group, out)


def all_gather(x, *, group=None, stream=None, out=None):
    """Every rank's x concatenated along axis 0 in rank order (a scalar counts as shape (1,)):
    shape (size * x.shape[0], *x.shape[1:])."""
    g = resolve(group)
    send = as_input(x)
    part = send.shape if send.ndim else (1,)
    recv = as_output(out, (g.size() * part[0],) + part[1:], send.dtype)
    check(_lib.get().tether_all_gather(g.handle, _ptr(send), _ptr(recv), send.size,
                                       code_of(send.dtype)))
    return recv


def reduce_scatter(x, op="sum", *, group=None, stream=None, out=None):
    """Reduce x over every rank with op ("sum", "prod", "max", "min"), then cut the result along
    axis 0 into size blocks: rank r gets block r, shape (x.shape[0] // size, *x.shape[1:])."""
    g = resolve(group)
    send = as_input(x)
    count = _blocks(send, g.size(), "reduce_scatter")
    recv = as_output(out, (send.shape[0] // g.size(),) + send.shape[1:], send.dtype)
    check(_lib.get().tether_reduce_scatter(g.handle, _ptr(send), _ptr(recv), count,
                                           code_of(send.dtype), _op_code(op)))
    return recv


def sum_scatter(x, *, group=None, stream=None, out=None):
    """reduce_scatter with op="sum" (the name mx.distributed uses)."""
    return reduce_scatter(x, "sum", group=group, out=out)


def broadcast(x, root=0, *, group=None, stream=None, out=None):
    """root's x on every rank. Other ranks' x only gives the shape and dtype (its values are not
    read); out=x overwrites x in place."""
    root = c_int(root, "broadcast", "root")  # a wrapped one would skip the copy below
    g = resolve(group)
    send = as_input(x)
    buf = as_output(out, send.shape, send.dtype)
    if g.rank() == root and buf is not send:
        np.copyto(buf, send)
    check(_lib.get().tether_broadcast(g.handle, _ptr(buf), buf.size, code_of(buf.dtype), root))
    return buf


def all_to_all(x, *, group=None, stream=None, out=None):
    """Cut x along axis 0 into size blocks; block j goes to rank j. Block i of the result came
    from rank i. Same shape as x; out must not overlap x."""
    g = resolve(group)
    send = as_input(x)
    count = _blocks(send, g.size(), "all_to_all")
    recv = as_output(out, send.shape, send.dtype)
    if np.may_share_memory(send, recv):
        raise ValueError("all_to_all cannot run in place: out must not overlap x")
    check(_lib.get().tether_all_to_all(g.handle, _ptr(send), _ptr(recv), count,
                                       code_of(send.dtype)))
    return recv


def send(x, dst, *, group=None, stream=None):
    """Send x to rank dst, which must call recv with the same shape and dtype. May return before
    dst has received. Unlike mx.distributed.send, returns None: numpy arrays are not lazy."""
    dst = c_int(dst, "send", "dst")
    g = resolve(group)
    buf = as_input(x)
    check(_lib.get().tether_send(g.handle, _ptr(buf), buf.size, code_of(buf.dtype), dst))


def recv(shape, dtype, src, *, group=None, stream=None, out=None):
    """Receive an array of this shape and dtype that rank src sent. With src=tether.ANY, the next
    one any rank sent, as (array, sender): each sender's arrays still come in the order sent."""
    src = c_int(src, "recv", "src")
    g = resolve(group)
    code = code_of(dtype)
    buf = as_output(out, _shape(shape), np.dtype(dtype).newbyteorder("="))
    if src != ANY_SOURCE:
        check(_lib.get().tether_recv(g.handle, _ptr(buf), buf.size, code, src))
        return buf
    sender = ctypes.c_int(-1)
    check(_lib.get().tether_recv_from(g.handle, _ptr(buf), buf.size, code, src,
                                      ctypes.byref(sender)))
    return buf, sender.value


def recv_like(x, src, *, group=None, stream=None, out=None):
    """recv with x's shape and dtype (src=tether.ANY: (array, sender) as there)."""
    arr = np.asarray(x)
    return recv(arr.shape, arr.dtype, src, group=group, out=out)


def barrier(*, group=None, stream=None):
    """Return once every rank of the group has entered the barrier."""
    check(_lib.get().tether_barrier(resolve(group).handle))
