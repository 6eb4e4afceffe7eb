/* backends/tcp/world.h - what the TCP backends share to form a world: the rank table (hostfile or
 * coordinator), a listener on every address of this rank, and the links of a plan made into an
 * engine. Each backend only says which links its plan has (mesh: all pairs; ring: neighbours). */
#ifndef TETHER_TCP_WORLD_H
#define TETHER_TCP_WORLD_H

#include "backends/net/setup.h"
#include "engine.h"

typedef struct tether__tcp_world {
    tether__rank_hosts table;
    int rank, size;
    int nlisten;
    int *listen_fds;
    tether__net_plan plan; /* no links yet: the backend fills out_links, in_links and addresses */
    char token[TETHER__TOKEN_MAX]; /* derived from the hostfile when TETHER_JOB_TOKEN is unset */
} tether__tcp_world;

/* The table and listeners from the hostfile (rank r listens on every address of its entry, each
 * allowed by TETHER_IFACE_PRIORITY) or, when allow_coordinator and no hostfile is set, from the
 * coordinator. Then an empty plan over the listeners, whose token, when TETHER_JOB_TOKEN is unset,
 * comes from the hostfile's contents (token.h). ECONFIG names the file and field. */
int tether__tcp_world_locate(const tether__config *cfg, int allow_coordinator,
                             tether__tcp_world *w);

/* 1 if own, an address of this rank, and theirs are on one cable: in the subnet of the interface
 * holding own. Loopback addresses (127.x standing in for cables) all reach each other; they need no
 * interface of their own, so both ends must treat them alike. */
int tether__tcp_on_cable(const char *own, const char *theirs);

/* The cables between this rank and peer: pairs of an address of each (peer's allowed by
 * TETHER_IFACE_PRIORITY) on one cable, no address in two pairs. Both ends count the same where
 * each address is on one cable (a subnet each, or all loopback). far, when not NULL, gets the index
 * of peer's address of each pair, in the order of this rank's addresses. ENOMEM only. */
int tether__tcp_world_cables(const tether__config *cfg, const tether__tcp_world *w, int peer,
                             int *far);

/* Add peer's allowed addresses to the plan. cables 0: all, in hostfile order (ring: link k goes to
 * address k); 1: all, those on a cable to one of ours first (mesh: pick the cable); K > 1: the
 * far ends of the K cables to it (tether__tcp_world_cables), link k's k-th, so each link is pinned
 * to its own cable (mesh with several cables per pair). ECONFIG when the plan opens links to peer
 * but none is allowed. */
int tether__tcp_world_addrs(const tether__config *cfg, tether__tcp_world *w, int peer, int cables);

/* Run the plan and make the engine over its links (backend names it in messages). */
int tether__tcp_world_connect(tether__tcp_world *w, const char *backend, tether__tcp_ep **out);

/* Close the listeners and free the table and plan. */
void tether__tcp_world_free(tether__tcp_world *w);

#endif
