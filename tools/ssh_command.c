/* tools/ssh_command.c - the argv that runs `<--ssh-command> host command` (ssh_command.h). */
#include <stdio.h>
#include <string.h>

#include "tools/ssh_command.h"

void tether__ssh_argv(char *argv[TETHER__SSH_ARGC], char *shell_cmd, size_t len,
                      const char *ssh_command, const char *host, const char *command)
{
    snprintf(shell_cmd, len, "exec %s \"$@\"", ssh_command);
    argv[0] = "/bin/sh";
    argv[1] = "-c";
    argv[2] = shell_cmd;
    argv[3] = "tether-ssh"; /* $0 of that shell */
    argv[4] = (char *)host;
    argv[5] = (char *)command;
    argv[6] = NULL;
}

int tether__ssh_command_ok(const char *cmd)
{
    size_t n = strlen(cmd);
    return n <= TETHER__SSH_COMMAND_MAX && strspn(cmd, " \t") < n;
}
