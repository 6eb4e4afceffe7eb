/* tools/ssh_command.h - how the tether command runs its --ssh-command (launch, check, config):
 * through /bin/sh, so the command may hold options and quotes ("ssh -F '/my dir/config'"), as
 * git's GIT_SSH_COMMAND may. */
#ifndef TETHER_TOOLS_SSH_COMMAND_H
#define TETHER_TOOLS_SSH_COMMAND_H

#include <stddef.h>

#define TETHER__SSH_ARGC 7           /* argv entries tether__ssh_argv fills, NULL included */
#define TETHER__SSH_COMMAND_MAX 4000 /* longest --ssh-command; the shell line adds 12 bytes */

/* Whether cmd can be an --ssh-command: not blank, at most TETHER__SSH_COMMAND_MAX bytes. */
int tether__ssh_command_ok(const char *cmd);

/* Fill argv with `/bin/sh -c 'exec <ssh_command> "$@"' tether-ssh host command`, the shell line
 * written into shell_cmd (len bytes, at least TETHER__SSH_COMMAND_MAX + 16). */
void tether__ssh_argv(char *argv[TETHER__SSH_ARGC], char *shell_cmd, size_t len,
                      const char *ssh_command, const char *host, const char *command);

#endif
