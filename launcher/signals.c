/* launcher/signals.c - the launcher's signals: caught into a self-pipe the supervisor polls, and
 * put back the way they were in every rank before it runs. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "launch_say.h"
#include "signals.h"

static const int caught[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static const int ignored[] = {SIGPIPE, SIGTTIN};
#define NCAUGHT (sizeof caught / sizeof caught[0])
#define NIGNORED (sizeof ignored / sizeof ignored[0])

static int sig_pipe[2] = {-1, -1};
static struct sigaction saved_caught[NCAUGHT], saved_ignored[NIGNORED];
static sigset_t saved_mask;

static void on_signal(int sig)
{
    int saved_errno = errno;
    unsigned char b = (unsigned char)sig;
    /* A full pipe already holds a wake-up; losing this byte only loses a duplicate SIGCHLD
     * (the supervisor reaps every child on each wake-up anyway). */
    ssize_t ignored_rc = write(sig_pipe[1], &b, 1);
    (void)ignored_rc;
    errno = saved_errno;
}

static int set_flags(int fd)
{
    return fcntl(fd, F_SETFD, FD_CLOEXEC) == 0 &&
                   fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0
               ? 0
               : -1;
}

int tether__signals_install(void)
{
    struct sigaction sa;
    if (pipe(sig_pipe) != 0 || set_flags(sig_pipe[0]) != 0 || set_flags(sig_pipe[1]) != 0) {
        tether__launch_say("cannot make the signal pipe: %s", strerror(errno));
        return -1;
    }
    sigprocmask(SIG_SETMASK, NULL, &saved_mask);
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sa.sa_handler = on_signal;
    for (size_t i = 0; i < NCAUGHT; i++)
        sigaction(caught[i], &sa, &saved_caught[i]);
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = 0;
    for (size_t i = 0; i < NIGNORED; i++)
        sigaction(ignored[i], &sa, &saved_ignored[i]);
    return sig_pipe[0];
}

int tether__signals_next(void)
{
    unsigned char b;
    ssize_t r = read(sig_pipe[0], &b, 1);
    return r == 1 ? b : 0;
}

static void mask_caught(int how)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < NCAUGHT; i++)
        sigaddset(&set, caught[i]);
    sigprocmask(how, &set, NULL);
}

void tether__signals_block(void)
{
    mask_caught(SIG_BLOCK);
}

void tether__signals_unblock(void)
{
    mask_caught(SIG_UNBLOCK);
}

/* Dispositions first, mask last: a signal pending from the blocked window then acts as it
 * would have on the program itself. */
void tether__signals_child_reset(void)
{
    for (size_t i = 0; i < NCAUGHT; i++)
        sigaction(caught[i], &saved_caught[i], NULL);
    for (size_t i = 0; i < NIGNORED; i++)
        sigaction(ignored[i], &saved_ignored[i], NULL);
    sigprocmask(SIG_SETMASK, &saved_mask, NULL);
}

void tether__signals_restore(void)
{
    tether__signals_child_reset();
    for (int i = 0; i < 2; i++) {
        if (sig_pipe[i] >= 0)
            close(sig_pipe[i]);
        sig_pipe[i] = -1;
    }
}
