/* backends/mpi/mpi_backend.h - the MPI backend's one export, for backends/table.c. */
#ifndef TETHER_MPI_BACKEND_H
#define TETHER_MPI_BACKEND_H

#include "core/transport.h"

extern const tether__transport_ops tether__mpi_ops;

#endif
