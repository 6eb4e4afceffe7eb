/* core/errors.h - recording failures: the thread-local detailed message and the TRY macros. */
#ifndef TETHER_CORE_ERRORS_H
#define TETHER_CORE_ERRORS_H

#include "tether.h"

#if defined(__GNUC__)
#define TETHER_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TETHER_PRINTF(a, b)
#endif

#define TETHER_ERRMSG_MAX 1024

/* Record why the current public call fails and return code. The first failure of a call wins:
 * it is the deepest and most specific (curl's rule); later ones only go to the trace log.
 * Say who, what, the numbers, and what to check next. No trailing newline. */
int tether__fail(int code, const char *fmt, ...) TETHER_PRINTF(2, 3);

/* Start of every public call: forget the previous call's message. */
void tether__clear_error(void);

/* 1 if the current call has recorded a failure already. */
int tether__has_error(void);

/* TRY logs the failing frame. log.h includes this header for TETHER_PRINTF, which is defined
 * above, so it is included here, after it: whichever of the two a file includes first, both are
 * complete. */
#include "log.h"

/* Return from the current function when expr fails, logging the frame at trace level. */
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        int try_rc_ = (expr);                                                                      \
        if (try_rc_ < 0) {                                                                         \
            TLOG_TRACE("-> %s", tether_err_name(try_rc_));                                         \
            return try_rc_;                                                                        \
        }                                                                                          \
    } while (0)

/* Jump to a cleanup label with rc set when expr fails. */
#define TRY_GOTO(rc, expr, label)                                                                  \
    do {                                                                                           \
        (rc) = (expr);                                                                             \
        if ((rc) < 0) {                                                                            \
            TLOG_TRACE("-> %s", tether_err_name(rc));                                              \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

#endif
