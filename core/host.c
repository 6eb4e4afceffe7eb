/* core/host.c - whether a host's ranks outnumber its CPUs (core/host.h). */
#include <unistd.h>

#include "host.h"

int tether__host_crowded(int ranks_here)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN); /* Linux and macOS both answer it */
    return cpus > 0 && ranks_here > cpus;
}
