/* backends/net/token.c - the job token when TETHER_JOB_TOKEN is unset (ranks started by hand).
 *
 * Every connection proves the job token in its handshake. tether launch sets a random one; without
 * it any local process could connect claiming a rank. With a hostfile, every rank of the job reads
 * the same table of ranks, so it gives a token all of them share: a connection from another job
 * (another hostfile) or a stray client is refused. It is no secret from whoever can read the
 * hostfile; TETHER_JOB_TOKEN is (docs/guide.md, "Threat model and guarantees"). With a coordinator
 * and no hostfile there is nothing shared to derive it from: init says so, loudly. */
#include "token.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/params.h"

static void mix(uint64_t h[2], const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            h[k] ^= ((const unsigned char *)p)[i];
            h[k] *= 1099511628211u;
        }
}

/* 64-bit FNV-1a of the table, from two bases: a 128-bit digest in hex. Not cryptographic; the
 * token only has to differ between jobs. The parsed table, not the file's bytes: copies of one
 * hostfile on several machines may differ in spacing. */
void tether__net_token_from_table(const tether__rank_hosts *t, const char *path, char *out,
                                  size_t n)
{
    uint64_t h[2] = {14695981039346656037u, 0x84222325cbf29ce4u};
    for (int r = 0; r < t->nranks; r++) {
        for (int j = 0; j < t->naddrs[r]; j++) {
            mix(h, t->addrs[r][j].host, strlen(t->addrs[r][j].host) + 1);
            mix(h, &t->addrs[r][j].port, sizeof t->addrs[r][j].port);
        }
        mix(h, "|", 1);
    }
    snprintf(out, n, "hostfile-%016llx%016llx", (unsigned long long)h[0], (unsigned long long)h[1]);
    TLOG_INFO("%s is unset: using a token derived from the ranks of %s, which "
              "every rank of the job reads",
              TETHER__VAR(JOB_TOKEN), path);
}

void tether__net_token_warn_unset(const tether__config *cfg)
{
    if (!cfg->job_token[0])
        TLOG_WARN("%s is unset: any process that reaches the coordinator %s or this "
                  "rank's port can join the job as a rank; set it to the same secret on every "
                  "rank (tether launch does)",
                  TETHER__VAR(JOB_TOKEN), cfg->coordinator);
}
