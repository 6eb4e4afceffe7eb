/* backends/tcp/token.h - the job token when TETHER_JOB_TOKEN is unset (token.c). */
#ifndef TETHER_TCP_TOKEN_H
#define TETHER_TCP_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "hostfile/hostfile.h"

/* A token from the rank table t (read from the hostfile path), into out (n bytes): the same table
 * gives the same token on every rank. */
void tether__tcp_token_from_table(const tether_rank_hosts *t, const char *path, char *out,
                                  size_t n);

/* Coordinator bootstrap without TETHER_JOB_TOKEN: warn that the job is unauthenticated. */
void tether__tcp_token_warn_unset(const tether_config *cfg);

#endif
