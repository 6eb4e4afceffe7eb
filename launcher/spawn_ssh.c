/* launcher/spawn_ssh.c - the ssh rank spawner: one ssh session per remote rank running
 * remote_script.c's script; stopping it runs "kill" on its host through a second ssh. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "guard.h"
#include "job.h"
#include "remote_script.h"
#include "spawn.h"
#include "ssh_helpers.h"
#include "tools/ssh_command.h"
#include "tools/strbuf.h"

static const char *ssh_command; /* the job's --ssh-command (set by ssh_start) */

/* Deliver sig to the rank's remote process group (and remove its files after a SIGKILL, as the
 * script cannot then). The grace period of a SIGTERM starts once it got there: ssh may take
 * seconds to connect. */
static void remote_kill(tether__rank_proc *p, int sig)
{
    char cmd[512];
    int n = snprintf(cmd, sizeof cmd, "kill -%s %s 2>/dev/null", sig == SIGKILL ? "KILL" : "TERM",
                     p->remote_kill);
    if (sig == SIGKILL)
        tether__ssh_add_rm_dir(cmd, sizeof cmd, n, p->remote_dir);
    pid_t helper = tether__ssh_helper_run(ssh_command, p->host, cmd);
    if (sig == SIGTERM && helper > 0) {
        p->term_helper = helper;
        p->kill_at_ms = tether__now_ms() + TETHER__SSH_HELPER_MAX_MS + TETHER__LAUNCH_GRACE_MS;
    }
}

/* Once the SIGTERM's kill command has ended (reaped here or by the supervisor), the grace period
 * runs from then. */
static void check_term_delivered(tether__rank_proc *p)
{
    long long delivered;
    if (p->term_helper <= 0 || waitpid(p->term_helper, NULL, WNOHANG) == 0)
        return;
    p->term_helper = 0;
    delivered = tether__now_ms() + TETHER__LAUNCH_GRACE_MS;
    if (delivered < p->kill_at_ms)
        p->kill_at_ms = delivered;
}

/* Stderr filter: the script's "TETHER__REMOTE_MARK <target> <dir>" line says what to kill. A stop
 * asked for before it came is sent now. */
static int on_mark(void *ctx, const char *line, size_t len)
{
    tether__rank_proc *p = ctx;
    size_t mlen = strlen(TETHER__REMOTE_MARK), tlen;
    const char *target = line + mlen + 1;
    if (len <= mlen + 1 || strncmp(line, TETHER__REMOTE_MARK " ", mlen + 1) != 0 ||
        p->remote_kill[0])
        return 0;
    tlen = strcspn(target, " \n");
    if (tlen == 0 || tlen >= sizeof p->remote_kill || strspn(target, "-0123456789") != tlen)
        return 0;
    snprintf(p->remote_kill, sizeof p->remote_kill, "%.*s", (int)tlen, target);
    if (target + tlen < line + len)
        snprintf(p->remote_dir, sizeof p->remote_dir, "%.*s", (int)(line + len - target - tlen - 1),
                 target + tlen + 1);
    tether__guard_add_remote(p->rank, p->remote_kill, p->remote_dir);
    if (p->stop == TETHER__STOP_TERM)
        remote_kill(p, SIGTERM);
    return 1;
}

static int ssh_start(const tether__job *job, int rank, tether__rank_proc *p)
{
    char *script = tether__remote_script(job, rank), shell_cmd[TETHER__SSH_COMMAND_MAX + 16],
         *argv[TETHER__SSH_ARGC];
    tether__strbuf remote = {0};
    int rc = -1;
    ssh_command = job->opts->ssh_command;
    if (!script)
        return -1;
    /* The login shell on the host parses this; /bin/sh then runs the script whatever it is. */
    tether__sb_add(&remote, "exec /bin/sh -c ");
    tether__sb_add_quoted(&remote, script);
    char *command = tether__sb_take(&remote, "a remote command");
    if (command) {
        tether__ssh_argv(argv, shell_cmd, sizeof shell_cmd, ssh_command, p->host, command);
        rc = tether__spawn_process(job, p, argv, NULL, NULL, NULL);
        p->err.filter = on_mark;
        p->err.filter_ctx = p;
        p->err.keep_whole = TETHER__REMOTE_MARK;
    }
    free(command);
    free(script);
    return rc;
}

/* The local ssh client stands for the rank: alive while the remote script runs. SIGTERM goes to
 * the remote group (once its mark came); SIGKILL goes there too, and to the ssh client, so a
 * dead network cannot keep the launcher waiting. */
static int ssh_signal(tether__rank_proc *p, int sig)
{
    check_term_delivered(p);
    if (sig != 0 && p->remote_kill[0])
        remote_kill(p, sig);
    else if (sig == SIGTERM) /* sent when the mark comes; killing ssh before could orphan it */
        p->kill_at_ms = tether__now_ms() + TETHER__SSH_HELPER_MAX_MS + TETHER__LAUNCH_GRACE_MS;
    if (sig == SIGKILL)
        kill(-p->pid, SIGKILL);
    return kill(-p->pid, 0) == 0 ? 0 : -1;
}

const tether__spawner tether__spawn_ssh = {
    .name = "ssh",
    .start = ssh_start,
    .signal = ssh_signal,
};
