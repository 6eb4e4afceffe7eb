"""tether_torch - the "tether" backend for torch.distributed.

    import tether_torch                      # registers the backend
    dist.init_process_group(backend="tether")

Ranks find each other the way the tether C library does: TETHER_HOSTFILE (set by `tether launch`),
TETHER_COORDINATOR, or, under torchrun, a coordinator that rank 0 opens on MASTER_ADDR at a free
port it publishes through torch's store (MASTER_PORT itself is taken by that store).
"""
import os
import socket

import torch
import torch.distributed as dist

from . import _C

__all__ = ["BACKEND"]

BACKEND = "tether"

# Any of these means tether already knows where the ranks are; torch's store is not needed.
_CONFIGURED_BY = ("TETHER_HOSTFILE", "MLX_HOSTFILE", "TETHER_COORDINATOR", "MLX_JACCL_COORDINATOR")
_COORDINATOR_KEY = "tether_torch/coordinator"


def _free_port():
    """A TCP port free on this host now (rank 0 listens on it moments later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _rendezvous(store, rank, size):
    """Point the C library at this job: torch's rank and size, and a coordinator if none is set."""
    os.environ["TETHER_RANK"] = str(rank)
    os.environ["TETHER_SIZE"] = str(size)
    if size == 1 or any(os.environ.get(v) for v in _CONFIGURED_BY):
        return
    master = os.environ.get("MASTER_ADDR")
    if not master:
        raise RuntimeError(
            "tether init_process_group: no TETHER_HOSTFILE or TETHER_COORDINATOR, and no "
            "MASTER_ADDR to start from; run under torchrun or `tether launch`, or set "
            "TETHER_COORDINATOR=host:port (rank 0's address and a free port)")
    if rank == 0:
        store.set(_COORDINATOR_KEY, "%s:%d" % (master, _free_port()))
    os.environ["TETHER_COORDINATOR"] = store.get(_COORDINATOR_KEY).decode()  # waits, store timeout


def _create(store, rank, size, timeout):
    """torch's creator: called by init_process_group(backend="tether") on every rank."""
    _rendezvous(store, rank, size)
    return _C.create_process_group(rank, size, timeout)


def _register():
    # torch 2.x asks which devices a backend serves; 1.x has no such argument.
    if int(torch.__version__.split(".")[0]) >= 2:
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])
    else:
        dist.Backend.register_backend(BACKEND, _create)


_register()
