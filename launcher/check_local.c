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
static void check_backends(tether__hostcheck_report *r, const tether__config *cfg)
{
    const tether__transport_ops *b;
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

/* One row: the value in force (libtether's settings as the accessor reads them, so an alias set
 * shows, named), else the row's default; those of the build scripts and the tests only where set.
 * A variable not read by libtether says who reads it. */
static void check_row(tether__hostcheck_report *r, const tether__param_row *v, const char *val,
                      const char *from)
{
    char who[64] = "", def[256], alias[80] = "";
    if (v->reader >= TETHER__READ_SCRIPTS && !(val && *val))
        return;
    if (v->reader != TETHER__READ_LIB)
        snprintf(who, sizeof who, "  [%s]", tether__param_reader_names[v->reader]);
    if (from && strcmp(from, v->name) != 0)
        snprintf(alias, sizeof alias, " (from %s)", from);
    tether__param_default_text(v, def, sizeof def);
    if (val && *val)
        tether__sb_addf(&r->text, "  %-23s %s%s%s\n", v->name, val, alias, who);
    else if (def[0])
        tether__sb_addf(&r->text, "  %-23s %s (default)%s\n", v->name, def, who);
    else
        tether__sb_addf(&r->text, "  %-23s (unset)%s\n", v->name, who);
}

/* The parameter table (core/env.c), printed from its rows. */
static void check_env(tether__hostcheck_report *r)
{
    tether__sb_add(&r->text, "environment:\n");
    for (int id = 0; id < TETHER__P_COUNT; id++) {
        const char *from = tether__param_from((tether__param)id), *val = NULL;
        if (from) /* malformed too: shown as it is, tether__config_load reported it */
            tether__param_text((tether__param)id, &val);
        check_row(r, &tether__params[id], val, from);
    }
    for (const tether__param_row *v = tether__params_other; v->name; v++)
        check_row(r, v, tether__env_raw(v->name), NULL);
}

void tether__hostcheck_local(tether__hostcheck_report *r)
{
    tether__config cfg;
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
