/* launcher/remote_script.c - the sh script a remote rank runs under ssh: deliver the job's files
 * without a shared file system, set up the rank, run it so it can be stopped, clean up. */
#include <stdio.h>
#include <string.h>

#include "bind.h"
#include "core/params.h"
#include "job.h"
#include "launch_args.h"
#include "launch_env.h"
#include "launch_say.h"
#include "remote_script.h"
#include "spawn.h"
#include "tools/strbuf.h"

/* echo 'tether launch: rank R on HOST: <msg>' >&2 */
static void add_error(tether__strbuf *b, const tether__job *job, int rank, const char *msg)
{
    char line[PATH_MAX + 512];
    snprintf(line, sizeof line, "tether launch: rank %d on %s: %s", rank,
             job->hosts.hosts[tether__rank_host(job, rank)].ssh, msg);
    tether__sb_add(b, "echo ");
    tether__sb_add_quoted(b, line);
    tether__sb_add(b, " >&2");
}

/* The job's files into a fresh private dir $d, and the variables that point at them. */
static void add_files(tether__strbuf *b, const tether__job *job, int rank)
{
    tether__sb_add(b, "umask 077\nd=$(mktemp -d \"${TMPDIR:-/tmp}/tether-rank.XXXXXX\") || { ");
    add_error(b, job, rank, "cannot make a temp dir");
    tether__sb_add(b, "; exit 127; }\n");
    for (int i = 0; i < job->nfiles; i++) {
        tether__sb_add(b, "printf '%s' ");
        tether__sb_add_quoted(b, job->files[i].text);
        const tether__param_row *var = &tether__params[job->files[i].var];
        tether__sb_addf(b, " >\"$d/%s\" && export %s=\"$d/%s\" %s=\"$d/%s\" || { ",
                        job->files[i].name, var->name, job->files[i].name, var->aliases[0],
                        job->files[i].name);
        add_error(b, job, rank, "cannot write the job's files into its temp dir");
        tether__sb_add(b, "; rm -rf \"$d\"; exit 127; }\n");
    }
}

/* --cwd must exist; otherwise the launcher's directory if this host has it, else home. */
static void add_cwd(tether__strbuf *b, const tether__job *job, int rank)
{
    const char *cwd = job->opts->cwd;
    char msg[PATH_MAX + 64];
    if (cwd) {
        snprintf(msg, sizeof msg, "--cwd %s: no such directory", cwd);
        tether__sb_add(b, "cd ");
        tether__sb_add_quoted(b, cwd);
        tether__sb_add(b, " 2>/dev/null || { ");
        add_error(b, job, rank, msg);
        tether__sb_add(b, "; rm -rf \"$d\"; exit 127; }\n");
    } else if (job->cwd[0]) {
        tether__sb_add(b, "cd ");
        tether__sb_add_quoted(b, job->cwd);
        tether__sb_add(b, " 2>/dev/null || cd\n");
    } else {
        tether__sb_add(b, "cd\n");
    }
}

static int add_env(tether__strbuf *b, const tether__job *job, int rank)
{
    tether__envlist env;
    int rc = 0;
    if (tether__rank_env(job, rank, 0, &env) != 0)
        return -1;
    for (int i = 0; i < env.n && rc == 0; i++) {
        const char *eq = strchr(env.kv[i], '=');
        if (!tether__env_name_ok(env.kv[i])) {
            tether__launch_say("environment entry '%s': the name must be letters, digits and '_'",
                               env.kv[i]);
            rc = -1;
            break;
        }
        tether__sb_addf(b, "export %.*s=", (int)(eq - env.kv[i]), env.kv[i]);
        tether__sb_add_quoted(b, eq + 1);
        tether__sb_add(b, "\n");
    }
    tether__envlist_free(&env);
    return rc;
}

/* What the program left behind in this shell's group gets SIGTERM and, if still there after the
 * launcher's grace period, SIGKILL, as a local rank's leftovers do (supervise.c). The shell is in
 * the group too, so it lists the others (ps, with pgid) instead of signalling the whole group;
 * the list also names the short-lived ps and awk, gone by the time they are checked. Without a
 * group of our own ($t is not -$$) only the SIGTERM can be passed on. */
static void add_stop_leftovers(tether__strbuf *b)
{
    tether__sb_addf(
        b,
        "kill -TERM $t 2>/dev/null\n"
        "if [ \"$t\" = \"-$$\" ]; then\n"
        "  others() { ps -A -o pid= -o pgid= 2>/dev/null | "
        "awk -v g=$$ '$2 == g && $1 != g { print $1 }'; }\n"
        "  left=$(others) i=0\n"
        "  while [ -n \"$left\" ] && [ $i -lt %d ]; do\n"
        "    alive=; for p in $left; do kill -0 $p 2>/dev/null && alive=\"$alive $p\"; done\n"
        "    left=$alive; [ -n \"$left\" ] && sleep 0.1; i=$((i + 1))\n"
        "  done\n"
        "  [ -n \"$left\" ] && for p in $(others); do kill -KILL $p 2>/dev/null; done\n"
        "fi\n",
        TETHER__LAUNCH_GRACE_MS / 100);
}

/* The launcher gone (killed: its guard then kills our ssh client; or its host lost): sshd ends a
 * session without a terminal by exiting and leaves the shell running, so a watcher ends the rank
 * once this shell's parent, sshd's session, has gone (checked each second: kill -0, or ps where
 * kill may not reach it). It stops the rank as the launcher would, SIGTERM to its group, SIGKILL
 * to the program after the grace period, and this shell then cleans up as after any stop. The
 * watcher survives the group's SIGTERM (trap : TERM, which its sleep does not inherit); the shell
 * ends it with SIGKILL once the program is gone (its sleeps are short: one left running may miss
 * the SIGTERM that follows, sent while it was starting). */
static void add_watch_parent(tether__strbuf *b)
{
    tether__sb_addf(b,
                    "( trap : TERM\n"
                    "  while kill -0 $PPID 2>/dev/null || ps -p $PPID >/dev/null 2>&1; do "
                    "sleep 1; done\n"
                    "  kill -TERM $t 2>/dev/null; i=0\n"
                    "  while kill -0 $pid 2>/dev/null && [ $i -lt %d ]; do sleep 0.1; "
                    "i=$((i + 1)); done\n"
                    "  kill -KILL $pid 2>/dev/null ) >/dev/null 2>&1 &\n"
                    "w=$!\n",
                    TETHER__LAUNCH_GRACE_MS / 100);
}

/* Run the program in the background so this shell stays to clean up. sshd made this shell a
 * session and process group leader, so "kill -TERM -PGID" from the launcher reaches the whole
 * tree; the shell itself survives it (trap) to remove $d. If some sshd did not make us a leader,
 * the launcher signals this shell and the trap passes SIGTERM on. A SIGTERM that comes after
 * the mark but before the program started is passed on once it has. Asynchronous commands get
 * /dev/null as stdin unless redirected, hence fd 3. */
static void add_run(tether__strbuf *b, const tether__job *job)
{
    tether__sb_addf(b,
                    "pid=\n"
                    "pg=$(ps -o pgid= -p $$ 2>/dev/null | tr -d ' ')\n"
                    "if [ \"$pg\" = \"$$\" ]; then t=-$$; trap 'stop=1' TERM; else t=$$; "
                    "trap 'stop=1; [ -n \"$pid\" ] && kill -TERM $pid 2>/dev/null' TERM; fi\n"
                    "trap : INT HUP\n"
                    "echo \"%s $t $d\" >&2\n"
                    "exec 3<&0\n",
                    TETHER__REMOTE_MARK);
    tether__sb_add(b, "$tb "); /* tether__bind_remote's prefix: taskset, or nothing */
    for (char **arg = job->opts->cmd; *arg; arg++) {
        tether__sb_add_quoted(b, *arg);
        tether__sb_add(b, " ");
    }
    /* Wait until the program is gone (a trapped signal interrupts wait), then stop what it left
     * behind in the group, remove the files and pass its status on. */
    tether__sb_add(b, "<&3 3<&- &\n"
                      "pid=$!\n"
                      "exec 3<&-\n");
    add_watch_parent(b);
    /* From here this shell says nothing: with the connection gone, a write to its stderr (as the
     * shell's own "Terminated" for a program stopped by a signal) would kill it with SIGPIPE
     * before it removed $d. The program keeps its own stderr. */
    tether__sb_add(b, "exec 2>/dev/null\n"
                      "[ -n \"$stop\" ] && kill -TERM $pid 2>/dev/null\n"
                      "while :; do wait $pid; rc=$?; kill -0 $pid 2>/dev/null || break; done\n"
                      "kill -KILL $w 2>/dev/null\n");
    add_stop_leftovers(b);
    tether__sb_add(b, "rm -rf \"$d\"\n"
                      "exit $rc\n");
}

char *tether__remote_script(const tether__job *job, int rank)
{
    tether__strbuf b = {0};
    add_files(&b, job, rank);
    add_cwd(&b, job, rank);
    if (add_env(&b, job, rank) != 0) {
        tether__sb_take(&b, "a remote command");
        return NULL;
    }
    tether__bind_remote(job, rank, &b);
    add_run(&b, job);
    return tether__sb_take(&b, "a remote command");
}
