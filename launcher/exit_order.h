/* launcher/exit_order.h - the order in which the ranks' processes ended (exit_order.c). */
#ifndef TETHER_LAUNCHER_EXIT_ORDER_H
#define TETHER_LAUNCHER_EXIT_ORDER_H

#include "spawn.h"

/* The order the ranks' processes ended in (exit_order.c): on Linux from the kernel (their exit
 * marks', output pipes' hang-ups and pidfds in one epoll set), whatever order waitpid reports them
 * in; elsewhere
 * the order waitpid reaped them in. note sets exit_seq of every rank that ended since the last
 * call (call it before closing a rank's pipes, and after reaping); ranks it cannot order keep 0. */
typedef struct tether__exit_order {
    int epfd;
    int n; /* ranks */
    unsigned long long next;
} tether__exit_order;

void tether__exit_order_open(tether__exit_order *o, tether__rank_proc *ranks, int n);
void tether__exit_order_note(tether__exit_order *o, tether__rank_proc *ranks);
void tether__exit_order_close(tether__exit_order *o, tether__rank_proc *ranks, int n);

#endif
