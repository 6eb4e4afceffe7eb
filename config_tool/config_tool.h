/* config_tool/config_tool.h - `tether config`: what each part knows about the hosts and the cables.
 *
 * Flow: options -> probe every host over ssh at once (probe_script.h, ssh_run.h) -> parse each
 * host's answer (probe_parse.h, then macos.h or linux_sysfs.h, over probe_fields.h) -> match ports
 * into cables and look for a mesh and a ring (topology.h) -> pick the backend (topology.h) -> give
 * every cable a /30 (addr_plan.h) -> commands per host, run with --auto-setup (host_setup.h) -> the
 * hostfile, DOT or summary (results.h); messages and exit statuses: config_say.h. Each header is
 * named after the file that implements it. Words: a port is one Thunderbolt port of a host (a
 * macOS bus or a Linux thunderbolt-net interface); a cable links a port of one host to a port of
 * another.
 */
#ifndef TETHER_CONFIG_TOOL_H
#define TETHER_CONFIG_TOOL_H

#include <stdint.h>

#include "hostfile/hostfile.h"

#define CT_MAX_HOSTS 64
#define CT_MAX_PORTS 16   /* Thunderbolt ports per host */
#define CT_MAX_PEERS 8    /* hosts seen behind one port (hubs) */
#define CT_MAX_ADDRS 64   /* IPv4 addresses per host */
#define CT_MAX_ROUTES 512 /* routes per host (a VPN may push hundreds) */
#define CT_MAX_IFACES 32  /* interfaces with a name worth keeping per host */
#define CT_MAX_CABLES 256
#define CT_UUID_MAX 64
#define CT_IF_MAX 32

typedef enum { CT_OS_UNKNOWN, CT_OS_MACOS, CT_OS_LINUX } ct_os;

typedef struct ct_port {
    char uuid[CT_UUID_MAX];                /* this port's Thunderbolt domain UUID */
    char peers[CT_MAX_PEERS][CT_UUID_MAX]; /* domain UUIDs of hosts behind it, any depth */
    int npeers;
    int receptacle;        /* macOS receptacle number ("Thunderbolt N"); 0 on Linux */
    char iface[CT_IF_MAX]; /* enX / thunderboltN; "" when none was found */
    char speed[48];        /* as reported, e.g. "80 Gb/s" or "20.0 Gb/s x 2" */
    double gbps;           /* current link speed; 0 when unknown */
} ct_port;

/* An IPv4 network on a host: an interface address or a route. Host byte order. */
typedef struct ct_net {
    char iface[CT_IF_MAX]; /* "" for a route through no named interface */
    uint32_t addr, mask;
} ct_net;

/* What the probe says about an interface besides its addresses. */
typedef struct ct_iface {
    char name[CT_IF_MAX];
    char hwport[48]; /* macOS hardware port ("Thunderbolt 1", "Wi-Fi"); "" on Linux */
    int mtu;
    int up;                 /* Linux operstate up / macOS flags UP */
    char bridge[CT_IF_MAX]; /* the macOS bridge it is a member of (Thunderbolt Bridge), or "" */
} ct_iface;

typedef struct ct_host {
    char name[TETHER__HOST_MAX]; /* what ssh is given */
    int reachable;
    char error[512]; /* why the probe failed: the ssh error or the malformed part */
    ct_os os;
    char os_version[32]; /* sw_vers -productVersion; kernel release on Linux */
    char model[64];      /* sysctl hw.model on macOS */
    ct_port ports[CT_MAX_PORTS];
    int nports;
    ct_iface ifaces[CT_MAX_IFACES];
    int nifaces;
    ct_net addrs[CT_MAX_ADDRS];
    int naddrs;
    ct_net routes[CT_MAX_ROUTES];
    int nroutes;
    char lan_ip[TETHER__HOST_MAX]; /* address of the default-route (or first non-TB) interface */
    char rdma_devs[CT_MAX_PORTS][CT_IF_MAX]; /* ibv_devices */
    int nrdma_devs;
    int rdma_enabled; /* rdma_ctl status says enabled */
    int sudo_ok;      /* sudo -n true succeeded */
} ct_host;

typedef struct ct_cable {
    int host[2], port[2]; /* host[0] < host[1] */
    double gbps;          /* the slower end's speed */
} ct_cable;

typedef enum { CT_BACKEND_ANY, CT_BACKEND_RING, CT_BACKEND_MESH, CT_BACKEND_RDMA } ct_backend;
/* --format: the backend names the hostfile is written with (see ct_hostfile_backend). */
typedef enum { CT_FORMAT_AUTO, CT_FORMAT_MLX, CT_FORMAT_TETHER } ct_format;

typedef struct ct_topology {
    ct_cable cables[CT_MAX_CABLES];
    int ncables;
    int links[CT_MAX_HOSTS][CT_MAX_HOSTS]; /* cables between each pair of hosts */
    int full_mesh;
    int ring[CT_MAX_HOSTS]; /* host order round the ring (Hamiltonian cycle); ring_len == nhosts
                               when one exists, else the largest cycle found */
    int ring_len;
} ct_topology;

/* One cable's /30: the address of each end. */
typedef struct ct_cable_addr {
    uint32_t net, addr[2]; /* addr[k] belongs to cables[c].host[k] */
    int reused;            /* both ends held it already */
    int used;              /* the chosen backend uses this cable */
} ct_cable_addr;

#define CT_MAX_ENVS 64

/* The pool of cable /30s without --subnet, then where the plan moves on, in order, when every /30
 * of it is on a host's network or route (a VPN or a lab network reached through the LAN): private
 * /16s clear of what home routers, OpenVPN (10.8), Kubernetes (10.96/12, 10.244/16), Docker's first
 * networks (172.17-172.2x) and AWS's default VPC (172.31) take, one in 10/8 and one in 172.16/12
 * so that a VPN routing either whole range leaves the other. */
#define CT_DEFAULT_POOL "192.168.200.0/22" /* 256 cables; rarely a home or office LAN */
#define CT_FALLBACK_POOL_1 "10.213.0.0/16"
#define CT_FALLBACK_POOL_2 "172.27.0.0/16"
#define CT_MAX_POOLS 3

typedef struct ct_pool {
    uint32_t net, mask;
} ct_pool;

typedef struct ct_options {
    const char *hosts[CT_MAX_HOSTS];
    int nhosts;
    int ethernet; /* --over ethernet */
    ct_backend backend;
    int auto_setup, dot, verbose, ignore_unreachable;
    int hostfile_only;             /* --hostfile-only: print the hostfile alone */
    ct_format format;              /* --format */
    const char *output;            /* --output FILE, or NULL */
    const char *envs[CT_MAX_ENVS]; /* --env K=V, in order */
    int nenvs;
    ct_pool pools[CT_MAX_POOLS]; /* --subnet; without it the default pool, then its fallbacks */
    int npools;
    const char *ssh_command; /* --ssh-command, run through /bin/sh (tools/ssh_command.h) */
    int timeout_s;           /* per ssh session */
} ct_options;

/* The whole run: options, hosts, topology, plan. */
typedef struct ct_run {
    ct_options opt;
    ct_host hosts[CT_MAX_HOSTS];
    int nhosts;
    ct_topology topo;
    ct_backend backend; /* chosen */
    char backend_why[512];
    ct_cable_addr plan[CT_MAX_CABLES];
} ct_run;

#endif
