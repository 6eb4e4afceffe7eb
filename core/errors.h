/* core/errors.h - recording failures: the thread-local detailed message and the TRY macros. */
#ifndef TETHER_CORE_ERRORS_H
#define TETHER_CORE_ERRORS_H

#include "log.h"
#include "tether.h"

#define TETHER__ERRMSG_MAX 1024

/* Record why the current public call fails and return code. The first failure of a call wins:
 * it is the deepest and most specific (curl's rule); later ones only go to the trace log.
 * Say who, what, the numbers, and what to check next. No trailing newline. */
int tether__fail(int code, const char *fmt, ...) TETHER__PRINTF(2, 3);

/* Start of every public call: forget the previous call's message. */
void tether__clear_error(void);

/* 1 if the current call has recorded a failure already. */
int tether__has_error(void);

/* Return from the current function when expr fails, logging the frame at trace level (log.h). */
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
