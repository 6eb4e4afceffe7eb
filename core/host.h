/* core/host.h - what a rank knows of the host it shares with other ranks: whether they outnumber
 * its CPUs. Ranks that do wait for each other's turn on a CPU, which changes what is fastest: no
 * waiter's spin without yielding (core/spin.h), and one copy of a large message rather than two
 * copies that would have run at once on two CPUs (backends/tcp/engine_impl.h). */
#ifndef TETHER_CORE_HOST_H
#define TETHER_CORE_HOST_H

/* 1 when ranks_here ranks (the caller included) outnumber this host's online CPUs, else 0. */
int tether__host_crowded(int ranks_here);

#endif
