/* launcher/check_local.c - what tether check reports of the machine it runs on: version, backends
 * and why one cannot run, interfaces (check_net.c), rdma_cm's choices, the TETHER_* values
 * (check.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/rdma/rdma.h"
#include "check.h"
#include "core/config.h"
#include "core/registry.h"
#include "core/transport.h"
#include "tether.h"
#include "tools/strbuf.h"

/* Each backend in the table: the registry's answer (tether_init's), and for one not configured
 * whether it could run here all the same (its libraries are loaded to find out). */
static void check_backends(tether__hostcheck_report *r, const tether_config *cfg)
{
    const tether_transport_ops *b;
    tether__sb_add(&r->text, "backends:\n");
    for (int i = 0; (b = tether__backend_at(i)); i++) {
        char why[1024] = "", usable_why[1024] = "";
        const char *said = why; /* usable()'s words: what it found, or why it cannot run */
        int state = tether__backend_ready(b, cfg, why, sizeof why);
        if (state == 0) { /* not configured (why says so): could it run all the same? */
            said = usable_why;
            if (!b->usable(usable_why, sizeof usable_why))
                state = -1;
        }
        if (state < 0) {
            tether__sb_addf(&r->text, "  %-10s not usable here: %s\n", b->name, said);
            continue;
        }
        if (said[0]) /* what it found: the MPI plugin's file and MPI */
            tether__sb_addf(&r->text, "  %-10s %s\n", b->name, said);
        if (state > 0)
            tether__sb_addf(&r->text, "  %-10s usable, configured\n", b->name);
        else
            tether__sb_addf(&r->text, "  %-10s usable; not configured in this environment: %s\n",
                            b->name, why);
    }
    tether__sb_add(&r->text, "  singleton  usable\n");
}

/* The TETHER_* table with the value in force for each; the variables of the build scripts and the
 * tests only where set. A variable not read by libtether says who reads it. */
static void check_env(tether__hostcheck_report *r)
{
    tether__sb_add(&r->text, "environment:\n");
    for (const tether_env_var *v = tether__env_table; v->name; v++) {
        const char *val = getenv(v->name);
        char who[64] = "";
        if (v->reader >= TETHER_READ_SCRIPTS && !(val && *val))
            continue;
        if (v->reader != TETHER_READ_LIB)
            snprintf(who, sizeof who, "  [%s]", tether__env_reader_names[v->reader]);
        if (val && *val)
            tether__sb_addf(&r->text, "  %-23s %s%s\n", v->name, val, who);
        else if (v->def[0])
            tether__sb_addf(&r->text, "  %-23s %s (default)%s\n", v->name, v->def, who);
        else
            tether__sb_addf(&r->text, "  %-23s (unset)%s\n", v->name, who);
    }
}

void tether__hostcheck_local(tether__hostcheck_report *r)
{
    tether_config cfg;
    char host[256] = "?", cm[4096];
    gethostname(host, sizeof host - 1);
    tether__sb_addf(&r->text, "tether %s on %s, jansson %s\n", TETHER_VERSION_STRING, host,
                    JANSSON_VERSION);
    if (tether__config_load(&cfg) != TETHER_OK) {
        tether__hostcheck_problem(r, "%s", tether_last_error());
        memset(&cfg, 0, sizeof cfg); /* report the rest as if nothing were configured */
    }
    check_backends(r, &cfg);
    tether__hostcheck_net(r, &cfg);
    tether__rdma_cm_report(&cfg, cm, sizeof cm);
    if (cm[0])
        tether__sb_addf(&r->text, "rdma_cm, to each hostfile address:\n%s", cm);
    check_env(r);
}
