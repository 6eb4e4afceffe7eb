/* launcher/bind.h - CPU binding of the ranks on this machine, --bind (bind.c). */
#ifndef TETHER_LAUNCHER_BIND_H
#define TETHER_LAUNCHER_BIND_H

#include "job.h"
#include "tools/strbuf.h"

/* A rank's CPUs: [first, first + count) of the launcher's allowed CPUs, in order. */
typedef struct tether__cpu_share {
    int first, count;
} tether__cpu_share;

/* Rank r's CPUs when --bind spread binds it (a rank started on this machine, with others here):
 * 1 and *out set (said with --verbose), else 0. */
int tether__bind_plan(const tether__job *job, int rank, tether__cpu_share *out);
/* In rank's child, before exec: run only on its share (a failure is said on its stderr). */
void tether__bind_child(int rank, const tether__cpu_share *share);

/* The remote rank's script part that sets $tb to the command prefix running the program on its
 * share of its host's CPUs ("" when not bound). */
void tether__bind_remote(const tether__job *job, int rank, tether__strbuf *b);

#endif
