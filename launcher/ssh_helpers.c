/* launcher/ssh_helpers.c - kill commands sent to remote hosts through ssh, in the background, and
 * waited for (bounded) before the launcher exits: the ssh spawner's stops (spawn_ssh.c) and the
 * guard's, once the launcher died (guard.c). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "job.h"
#include "launch_say.h"
#include "signals.h"
#include "spawn.h"
#include "ssh_helpers.h"
#include "tools/ssh_command.h"

#define MAX_HELPERS 256 /* kill commands in flight; past that the oldest is given up */

/* Kill commands sent to remote hosts, waited for before the launcher exits. */
static pid_t helpers[MAX_HELPERS];
static int nhelpers;

/* Forget helpers that have ended (the supervisor may have reaped them already: ECHILD). */
static void prune_helpers(void)
{
    int kept = 0;
    for (int i = 0; i < nhelpers; i++) {
        pid_t r = waitpid(helpers[i], NULL, WNOHANG);
        if (r == 0)
            helpers[kept++] = helpers[i];
    }
    nhelpers = kept;
}

pid_t tether__ssh_helper_run(const char *ssh_command, const char *host, const char *command)
{
    char shell_cmd[TETHER__SSH_COMMAND_MAX + 16], *argv[TETHER__SSH_ARGC];
    pid_t pid;
    prune_helpers();
    if (nhelpers == MAX_HELPERS) { /* hundreds of hosts stuck connecting: drop the oldest */
        kill(-helpers[0], SIGKILL);
        waitpid(helpers[0], NULL, 0);
        memmove(helpers, helpers + 1, (size_t)--nhelpers * sizeof *helpers);
    }
    tether__ssh_argv(argv, shell_cmd, sizeof shell_cmd, ssh_command, host, command);
    tether__signals_block();
    pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        tether__signals_child_reset();
        setpgid(0, 0);
        dup2(null, 0);
        dup2(null, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    tether__signals_unblock();
    if (pid < 0)
        tether__launch_say("cannot run '%s' on %s: fork: %s", command, host, strerror(errno));
    else
        helpers[nhelpers++] = pid;
    return pid;
}

void tether__ssh_add_rm_dir(char *cmd, size_t size, int n, const char *dir)
{
    if (dir[0] && strchr(dir, '\'') == NULL && n > 0 && (size_t)n < size)
        snprintf(cmd + n, size - (size_t)n, "; rm -rf '%s'", dir);
}

void tether__ssh_end_remote(const tether__job *job, int rank, const char *target, const char *dir)
{
    char cmd[512];
    int n =
        snprintf(cmd, sizeof cmd, "kill -TERM %s 2>/dev/null; sleep %d; kill -KILL %s 2>/dev/null",
                 target, TETHER__LAUNCH_GRACE_MS / 1000, target);
    tether__ssh_add_rm_dir(cmd, sizeof cmd, n, dir);
    tether__ssh_helper_run(job->opts->ssh_command,
                           job->hosts.hosts[tether__rank_host(job, rank)].ssh, cmd);
}

/* Wait for the kill commands still running (a SIGKILL's among them: the rank's ssh client is
 * gone already, but its remote processes only die when the command gets there), at most
 * TETHER__SSH_HELPER_MAX_MS, then stop them. */
void tether__ssh_helpers_wait(void)
{
    long long until = tether__now_ms() + TETHER__SSH_HELPER_MAX_MS;
    for (prune_helpers(); nhelpers > 0 && tether__now_ms() < until; prune_helpers())
        usleep(50 * 1000);
    for (int i = 0; i < nhelpers; i++) {
        kill(-helpers[i], SIGKILL);
        waitpid(helpers[i], NULL, 0);
    }
    nhelpers = 0;
}
