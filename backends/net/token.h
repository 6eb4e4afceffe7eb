/* backends/net/token.h - the job token when TETHER_JOB_TOKEN is unset (token.c). */
#ifndef TETHER_NET_TOKEN_H
#define TETHER_NET_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "hostfile/hostfile.h"

/* A token from the rank table t (read from the hostfile path), into out (n bytes): the same table
 * gives the same token on every rank. */
void tether__net_token_from_table(const tether__rank_hosts *t, const char *path, char *out,
                                  size_t n);

/* Coordinator bootstrap without TETHER_JOB_TOKEN: warn that the job is unauthenticated. */
void tether__net_token_warn_unset(const tether__config *cfg);

#endif
