/* backends/tcp/token.c - the job token when TETHER_JOB_TOKEN is unset (ranks started by hand).
 *
 * Every connection presents the job token in its hello. tether launch sets a random one; without
 * it any local process could connect claiming a rank. With a hostfile, every rank of the job reads
 * the same file, so its contents give a token all of them share: a connection from another job
 * (another hostfile) or a stray client is refused. It is no secret from whoever can read the
 * hostfile; TETHER_JOB_TOKEN is (docs/guide.md, "Threat model and guarantees"). With a coordinator
 * and no hostfile there is nothing shared to derive it from: init says so, loudly. */
#include "token.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/errors.h"
#include "core/log.h"

/* 64-bit FNV-1a of the file, from two bases: a 128-bit digest in hex. Not cryptographic; the
 * token only has to differ between files. */
int tether__tcp_token_from_file(const char *path, char *out, size_t n)
{
    uint64_t h[2] = {14695981039346656037u, 0x84222325cbf29ce4u};
    unsigned char buf[4096];
    size_t got;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tether__fail(TETHER_ECONFIG, "%s: cannot read it for the job token: %s", path,
                            strerror(errno));
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < got; i++)
            for (int k = 0; k < 2; k++) {
                h[k] ^= buf[i];
                h[k] *= 1099511628211u;
            }
    fclose(f);
    snprintf(out, n, "hostfile-%016llx%016llx", (unsigned long long)h[0], (unsigned long long)h[1]);
    TLOG_INFO("TETHER_JOB_TOKEN is unset: using a token derived from %s, which every rank of the "
              "job reads",
              path);
    return TETHER_OK;
}

void tether__tcp_token_warn_unset(const tether_config *cfg)
{
    if (!cfg->job_token[0])
        TLOG_WARN("TETHER_JOB_TOKEN is unset: any process that reaches the coordinator %s or this "
                  "rank's port can join the job as a rank; set it to the same secret on every "
                  "rank (tether launch does)",
                  cfg->coordinator);
}
