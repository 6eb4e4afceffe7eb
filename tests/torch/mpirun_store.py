"""Run a command under an MPI launcher as a torch user would: MASTER_ADDR and a free MASTER_PORT
for torch's store in the environment (the launcher passes it to every rank on this host); RANK and
WORLD_SIZE come from the launcher itself (tether_torch reads them). Tests DDP over tether's mpi
backend.

Usage: mpirun_store.py LAUNCHER [ARGS...]   (the whole command line, mpirun first)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from free_ports import free_ports  # noqa: E402


def main():
    port = free_ports(1)[0]  # for torch's store
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
