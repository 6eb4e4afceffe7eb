/* core/size_arg.h - byte sizes given as arguments (tether bench -b/-e, tether check --bytes, the
 * kernel microbenchmark's -s): one rule, so "64K" means the same to every command.
 *
 * The rule: a whole decimal number of bytes, then optionally a unit K, M, G or T (powers of 1024,
 * either case), then optionally B: "8", "8B", "64K", "64KB", "1m", "2G". Nothing else: no sign,
 * no spaces, no fractions (a size is whole bytes), no other letters. 0 is a size; whether a
 * command accepts it, and any other limit, is the command's to say. */
#ifndef TETHER_CORE_SIZE_ARG_H
#define TETHER_CORE_SIZE_ARG_H

#include <stddef.h>

/* Room for any message tether__size_parse writes (a longer text is cut short in it). */
#define TETHER__SIZE_ERR_MAX 256

/* text as a number of bytes into *out: 0, or -1 with *out untouched and a message in err (errlen
 * bytes) that names the argument `what` (e.g. "-b") and quotes text: empty, not a size, negative,
 * or too large for this machine's size_t. */
int tether__size_parse(const char *what, const char *text, size_t *out, char *err, size_t errlen);

#endif
