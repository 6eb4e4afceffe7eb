/* config_tool/ssh_run.h - one ssh session per host, all at once, each under a deadline (ssh_run.c).
 */
#ifndef TETHER_CONFIG_TOOL_SSH_RUN_H
#define TETHER_CONFIG_TOOL_SSH_RUN_H

#include <stddef.h>

/* One ssh session's result. */
typedef struct ct_session {
    char *out;  /* stdout, NUL-terminated (malloc'd) */
    char *err;  /* stderr */
    int status; /* exit status; -1 when it timed out or could not start */
    int timed_out;
} ct_session;

/* Run `SSH_COMMAND HOST COMMAND` for every host at once, each for at most timeout_s seconds.
 * commands[i] is what hosts[i] runs. Fills sessions[i]; returns 0, or -1 if nothing could start. */
int ct_ssh_run_all(const char *ssh_command, const char *const *hosts, const char *const *commands,
                   int n, int timeout_s, ct_session *sessions);
void ct_session_free(ct_session *s);
/* A one-line reason for a failed session ("ssh: connect to host x: Connection refused"). */
void ct_session_error(const ct_session *s, int timeout_s, char *buf, size_t len);

#endif
