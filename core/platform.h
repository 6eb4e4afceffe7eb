/* core/platform.h - what POSIX leaves to each system, named once, so platform code stays small.
 *
 * TETHER__LINUX is 1 where the Linux-only fast paths are compiled in: the same-host memory path
 * (process_vm_readv), Linux socket options, /proc and /sys readers, prctl. It is 0 on every other
 * system and in the portable build (cmake -DTETHER_PORTABLE=ON), which therefore compiles on Linux
 * the code macOS runs, and runs the whole suite over it. docs/architecture.md lists every place
 * that tests TETHER__LINUX or __APPLE__. */
#ifndef TETHER_CORE_PLATFORM_H
#define TETHER_CORE_PLATFORM_H

#if defined(__linux__) && !defined(TETHER_PORTABLE)
#define TETHER__LINUX 1
#else
#define TETHER__LINUX 0
#endif

/* The process environment. A macOS shared library cannot refer to environ (only the main program
 * can; environ(7)): it asks libSystem for it. */
#if defined(__APPLE__)
#include <crt_externs.h>
#define tether__environ (*_NSGetEnviron())
#else
extern char **environ;
#define tether__environ environ
#endif

/* A slow path kept out of its caller, so that the fast path around it stays a few instructions
 * without the slow one's registers and stack to save. */
#if defined(__GNUC__)
#define TETHER__NOINLINE __attribute__((noinline))
#else
#define TETHER__NOINLINE
#endif

#endif
