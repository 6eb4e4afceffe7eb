/* tools/say.h - what the tether command's subcommands tell the user: one line on stderr, prefixed
 * with the subcommand ("tether launch: ...", "tether config: ..."). Beneath launcher/ and
 * config_tool/, which both speak through it. */
#ifndef TETHER_TOOLS_SAY_H
#define TETHER_TOOLS_SAY_H

#include <stdarg.h>

#if defined(__GNUC__)
#define TETHER__SAY_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TETHER__SAY_PRINTF(a, b)
#endif

/* "<who>: <message>\n" on stderr in one write, so lines of several processes never interleave. */
void tether__say(const char *who, const char *fmt, ...) TETHER__SAY_PRINTF(2, 3);
void tether__vsay(const char *who, const char *fmt, va_list ap) TETHER__SAY_PRINTF(2, 0);

#endif
