"""tether_torch - the "tether" backend for torch.distributed.

    import tether_torch                      # registers the backend
    dist.init_process_group(backend="tether")

Ranks find each other the way the tether C library does: TETHER_HOSTFILE (set by `tether launch`),
TETHER_COORDINATOR, an MPI launcher (mpirun, mpiexec, srun: tether runs over the site's MPI,
docs/mpi.md), or, under torchrun, a coordinator that rank 0 opens on MASTER_ADDR at a free port it
publishes through torch's store (MASTER_PORT itself is taken by that store). Where
TETHER_JOB_TOKEN is unset, rank 0 makes a random one and publishes it the same way.

Under an MPI launcher, RANK, WORLD_SIZE and LOCAL_RANK default to the launcher's own numbers when
this module is imported, so torch's env:// rendezvous needs only MASTER_ADDR and MASTER_PORT.

Importing it also lets torch.distributed.monitored_barrier, which torch refuses for every backend
not named gloo, through for tether.
"""
import datetime
import os
import secrets
import socket

import torch
import torch.distributed as dist

from . import _C

__all__ = ["BACKEND"]

BACKEND = "tether"

# Any of these means tether already knows where the ranks are; torch's store is not needed.
_CONFIGURED_BY = ("TETHER_HOSTFILE", "MLX_HOSTFILE", "TETHER_COORDINATOR", "MLX_JACCL_COORDINATOR")
_COORDINATOR_KEY = "tether_torch/coordinator"
_TOKEN_KEY = "tether_torch/job_token"
# What an MPI launcher sets in every rank (the C library's list, backends/mpi/mpi_backend.c).
_MPI_LAUNCHED_BY = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "MPI_LOCALNRANKS")
# Rank, size and local rank as Open MPI's mpirun and MPICH's hydra name them.
_MPI_NUMBERS = (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
                ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"))


def _numbers_from_mpi_launcher(environ=os.environ):
    """RANK, WORLD_SIZE, LOCAL_RANK from the MPI launcher's variables, only where they are unset."""
    for rank, size, local in _MPI_NUMBERS:
        if rank in environ and size in environ:
            environ.setdefault("RANK", environ[rank])
            environ.setdefault("WORLD_SIZE", environ[size])
            if local in environ:
                environ.setdefault("LOCAL_RANK", environ[local])
            return


def _free_port():
    """A TCP port free on this host now (rank 0 listens on it moments later): one below the
    kernel's range for outgoing connections, so that none of them takes it in between (a port the
    kernel hands out, bind(0)'s, was taken so once in CI: "address already in use")."""
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass  # not Linux: its default range starts higher still (macOS: 49152)
    pick = secrets.SystemRandom()
    for _ in range(100):
        port = pick.randrange(10000, max(low, 10001))
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _share_token(store, rank):
    """TETHER_JOB_TOKEN, where unset, from torch's store: rank 0 makes a random one. Every
    connection between ranks proves it, so a process that reaches a rank's port without it is
    refused, and no rank warns that the job is open to any process (it is as secret as the store,
    which whoever reaches MASTER_PORT can read)."""
    if os.environ.get("TETHER_JOB_TOKEN"):
        return
    if rank == 0:
        store.set(_TOKEN_KEY, secrets.token_hex(16))
    os.environ["TETHER_JOB_TOKEN"] = store.get(_TOKEN_KEY).decode()  # waits, store timeout


def _rendezvous(store, rank, size):
    """Point the C library at this job: torch's rank and size, the job token, and a coordinator if
    none is set."""
    os.environ["TETHER_RANK"] = str(rank)
    os.environ["TETHER_SIZE"] = str(size)
    if size == 1 or any(os.environ.get(v) for v in _MPI_LAUNCHED_BY):
        return  # the mpi backend: MPI connects the ranks, no tether port or token
    _share_token(store, rank)
    if any(os.environ.get(v) for v in _CONFIGURED_BY):
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


def _members(store, rank, size):
    """The world ranks of a subgroup, in its rank order, told through the group's own store."""
    store.set("tether_torch/world_rank/%d" % rank, str(_C.world_rank()))
    return [int(store.get("tether_torch/world_rank/%d" % r)) for r in range(size)]


def _create(store, rank, size, timeout):
    """torch's creator: init_process_group(backend="tether") on every rank forms the world;
    new_group(ranks, backend="tether") on the listed ranks forms a subgroup of it."""
    if _C.world_rank() >= 0:
        return _C.create_subgroup(_members(store, rank, size), rank, timeout)
    _rendezvous(store, rank, size)
    return _C.create_process_group(rank, size, timeout)


_torch_monitored_barrier = dist.monitored_barrier


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """torch.distributed.monitored_barrier, which refuses every backend not named gloo, let through
    for tether (its process group implements it as gloo does); other backends go to torch's."""
    c10d = dist.distributed_c10d
    if c10d._rank_not_in_group(group) or dist.get_backend(group) != BACKEND:
        return _torch_monitored_barrier(group, timeout, wait_all_ranks)
    if timeout is None:
        timeout = c10d.default_pg_timeout
    elif isinstance(timeout, (int, float)):
        timeout = datetime.timedelta(seconds=timeout)
    pg = c10d._get_default_group() if group is None else group
    return pg.monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)


def _register():
    # torch 2.x asks which devices a backend serves; 1.x has no such argument. CUDA and MPS tensors
    # are staged through host memory.
    if int(torch.__version__.split(".")[0]) >= 2:
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu", "cuda", "mps"])
    else:
        dist.Backend.register_backend(BACKEND, _create)


_numbers_from_mpi_launcher()
_register()
dist.monitored_barrier = dist.distributed_c10d.monitored_barrier = monitored_barrier
