/* tests/launcher/exit_mid_job.c - a rank that quits in the middle of a job of all-reduces, for
 * the launcher's blame tests: rank EXIT_RANK calls _exit(EXIT_STATUS) after ITERS all-reduces of
 * COUNT floats, while its peers go on into the next all-reduce, fail (the peer is gone) and exit
 * 1. Arguments: EXIT_RANK EXIT_STATUS ITERS COUNT [slow]. With "slow" the quitting rank's stdout
 * and stderr close well after its sockets (see slow_last_close; Linux). */
#include <stdio.h>
#include <stdlib.h>
#ifdef __linux__
#include <sys/inotify.h>
#endif
#include <unistd.h>

#include <tether.h>

/* Leave open files that take a while to release: inotify instances watching a directory (the
 * release of each waits for the kernel's SRCU grace period, a few ms: 16 of them held stdout's
 * hang-up back 40 ms here). Opened before the group's sockets, they sit under them, and an exiting
 * process releases its files highest descriptor first: the peers see this rank gone well before
 * its stdout and stderr close, as a busy machine makes happen by chance. */
static int slow_last_close(void)
{
#ifdef __linux__
    for (int i = 0; i < 16; i++) {
        int fd = inotify_init1(IN_CLOEXEC);
        if (fd < 0 || inotify_add_watch(fd, "/", IN_CREATE) < 0)
            return -1;
    }
    return 0;
#else
    return -1; /* inotify is Linux's */
#endif
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s EXIT_RANK EXIT_STATUS ITERS COUNT [slow]\n", argv[0]);
        return 2;
    }
    int exit_rank = atoi(argv[1]), exit_status = atoi(argv[2]), iters = atoi(argv[3]);
    size_t count = (size_t)atol(argv[4]);
    const char *env_rank = getenv("TETHER_RANK");
    if (argc == 6 && env_rank && atoi(env_rank) == exit_rank && slow_last_close() != 0) {
        perror("slow_last_close");
        return 1;
    }
    tether_group *g = NULL;
    int rc = tether_init("any", 0, &g);
    if (rc != TETHER_OK) {
        fprintf(stderr, "tether_init: %s: %s\n", tether_strerror(rc), tether_last_error());
        return 1;
    }
    int rank = tether_group_rank(g);
    float *x = calloc(count, sizeof *x);
    if (!x)
        return 1;
    for (int i = 0; i <= iters; i++) {
        if (rank == exit_rank && i == iters)
            _exit(exit_status); /* at once: no goodbye to the peers, as a crash */
        rc = tether_all_reduce(g, x, x, count, TETHER_FLOAT32, TETHER_SUM);
        if (rc != TETHER_OK) {
            fprintf(stderr, "rank %d: all_reduce %d: %s: %s\n", rank, i, tether_strerror(rc),
                    tether_last_error());
            return 1;
        }
    }
    return 0; /* only when EXIT_RANK is not a rank of the job */
}
