/* backends/net/setup.h - forming the TCP links of a world, every connect and accept at once.
 *
 * A plan says, per peer, how many links this rank opens to it (trying its addresses in order) and
 * how many it accepts from it. The mesh opens one link per cable they share (at least one) to
 * every higher rank and accepts as many from every lower rank; the ring opens K links to its right
 * neighbour and accepts K from its left.
 * Every link starts with the hello of handshake.h. Strays (garbage, another job's token, silence
 * for 2 s) are logged and dropped; the set-up goes on. */
#ifndef TETHER_NET_SETUP_H
#define TETHER_NET_SETUP_H

#include "core/config.h"
#include "hostfile/hostfile.h"
#include "socket.h"

/* How long a new connection may take to send its hello, and a connector to get its answer. */
#define TETHER__HELLO_TIMEOUT_MS 2000

typedef struct tether__net_plan {
    int rank, size;
    const char *token; /* TETHER_JOB_TOKEN, "" when unset */
    int timeout_ms;    /* the whole set-up */
    int heartbeat_ms;  /* TETHER_HEARTBEAT: the endpoint's heartbeats, once formed */
    int nlisten;
    const int *listen_fds; /* non-blocking listeners; the caller closes them */
    int *out_links;        /* per peer: links this rank opens to it */
    int *in_links;         /* per peer: links this rank accepts from it */
    int *naddrs;           /* per peer: addresses to connect to, preferred first */
    int pin_addrs;         /* link k goes to address k (mod naddrs) and stays there: one link per
                              cable (ring); else so only to peers with several links (the mesh's
                              cables), and a single link tries the addresses in turn */
    tether__hostaddr **addrs;
    const char *announce_host; /* NULL, or an address to send in every hello (bootstrap) */
    int announce_port;
    const char *backend;               /* sent in every hello; NULL in the bootstrap */
    char settings[TETHER__AGREED_MAX]; /* tether__config_agreed: sent in every hello */
    /* A rejoin (backends/tcp/engine_rejoin.c): NULL for a set-up; else per peer a mask of the
     * links this rank opens (bit k: its k-th) that are dialled again, the others not, and the
     * set-up ends once any one link of the plan, dialled or accepted, is up. */
    const uint64_t *redial;
} tether__net_plan;

/* A plan for rank of size ranks with no links yet, the token, timeout and settings from cfg. */
int tether__net_plan_init(tether__net_plan *p, int rank, int size, const tether__config *cfg);

/* Append a copy of a to the addresses tried for peer. */
int tether__net_plan_add_addr(tether__net_plan *p, int peer, const tether__hostaddr *a);

void tether__net_plan_free(tether__net_plan *p);

/* The links of a pair are numbered the same way on both sides: first those the lower rank
 * opened, then those the higher rank opened. Striping relies on it. */
typedef struct tether__net_links {
    int size;
    int *nlinks;                     /* per peer */
    int **fds;                       /* per peer, per link: connected, tuned, non-blocking */
    unsigned char **dialed;          /* per peer, per link: 1 if this rank opened it */
    char (*addr)[TETHER__ADDR_TEXT]; /* per peer: its address, for messages */
    tether__hostaddr *announced;     /* per peer: the address it announced (bootstrap) */
    int timeout_ms; /* the plan's: how long the engine waits for its peers' first frames */
} tether__net_links;

/* Run the plan until every link is up. ETIMEDOUT names the links still missing and why; EPEER
 * when a rank of this job disagrees (size, version, links); ENET on socket failures. */
int tether__net_setup(const tether__net_plan *plan, tether__net_links *out);

/* Close the sockets still in l (those not taken, set to -1, by an engine) and free it. */
void tether__net_links_free(tether__net_links *l);

#endif
