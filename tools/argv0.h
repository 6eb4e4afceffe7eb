/* tools/argv0.h - the tether command's own name and path, for the subcommands that start it again
 * (tether check runs itself on every host through tether launch). */
#ifndef TETHER_TOOLS_ARGV0_H
#define TETHER_TOOLS_ARGV0_H

#include <stddef.h>

/* argv[0] of the tether command, set by main() (cli/main.c); "tether" until then (unit tests). */
extern const char *tether__argv0;

/* This program's path, for the ranks to run on every host: how it was started (argv[0]) made
 * absolute, found on PATH when it holds no '/'. POSIX has no call for it (/proc/self/exe is
 * Linux's), and this way every system runs the same code. "tether" when nothing is found; else buf
 * (len bytes). */
const char *tether__self_path(char *buf, size_t len);

#endif
