/* backends/mpi/load.h - finding and loading the MPI plugin (backends/mpi/plugin.h). */
#ifndef TETHER_BACKENDS_MPI_LOAD_H
#define TETHER_BACKENDS_MPI_LOAD_H

#include <stddef.h>

#include "plugin.h"

/* Load the plugin once per process (later calls return the same table; it is never unloaded):
 * TETHER_MPI_PLUGIN if set, else libtether-mpi-<flavour> for the launcher that started this
 * process, next to libtether, then on the loader's search path. *path says which file. Returns
 * the table, or NULL with why naming every file tried and the loader's reason. */
const tether__mpi_plugin *tether__mpi_plugin_load(const char **path, char *why, size_t why_len);

#endif
