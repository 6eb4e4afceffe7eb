/* backends/mpi/mpi_backend.h - the MPI backend's one export, for backends/table.c. */
#ifndef TETHER_MPI_BACKEND_H
#define TETHER_MPI_BACKEND_H

#include "core/transport.h"

extern const tether_transport_ops tether_mpi_ops;

#endif
