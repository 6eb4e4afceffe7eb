/* core/log.h - leveled logging to stderr, every line prefixed "[tether r2/4 mesh]". */
#ifndef TETHER_CORE_LOG_H
#define TETHER_CORE_LOG_H

#if defined(__GNUC__)
#define TETHER__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TETHER__PRINTF(a, b)
#endif

enum { TETHER__LOG_WARN = 0, TETHER__LOG_INFO = 1, TETHER__LOG_TRACE = 2 };

/* Level from TETHER_VERBOSE: unset/0 -> WARN, 1 -> INFO, 2 -> TRACE. */
int tether__log_level(void);

/* Who this process is, for the prefix; set once the world group has formed. */
void tether__log_identity(int rank, int size, const char *backend);

void tether__log(int level, const char *file, int line, const char *fmt, ...) TETHER__PRINTF(4, 5);

#define TLOG_WARN(...) tether__log(TETHER__LOG_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define TLOG_INFO(...)                                                                             \
    do {                                                                                           \
        if (tether__log_level() >= TETHER__LOG_INFO)                                               \
            tether__log(TETHER__LOG_INFO, __FILE__, __LINE__, __VA_ARGS__);                        \
    } while (0)
#define TLOG_TRACE(...)                                                                            \
    do {                                                                                           \
        if (tether__log_level() >= TETHER__LOG_TRACE)                                              \
            tether__log(TETHER__LOG_TRACE, __FILE__, __LINE__, __VA_ARGS__);                       \
    } while (0)

#endif
