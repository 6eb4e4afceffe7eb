/* core/fork.c - the fork count behind tether__group_owned (core/fork.h). */
#include <pthread.h>

#include "fork.h"

unsigned tether__forks;
static pthread_once_t forks_once = PTHREAD_ONCE_INIT;

static void count_fork(void)
{
    tether__forks++; /* in the child only, while it has one thread */
}

static void watch_forks(void)
{
    pthread_atfork(NULL, NULL, count_fork);
}

void tether__forks_watch(void)
{
    pthread_once(&forks_once, watch_forks);
}
