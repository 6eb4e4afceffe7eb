/* tests/fuzz/fuzz_tcp_link.c - libFuzzer harness: the TCP engine's hello and frame decoders, fed
 * through a real loopback link. A mesh rank 1 of 2 opens in a thread of this process; the harness
 * is rank 0. The first byte picks what the input is:
 * - even: a stray connection's bytes (a hello, or garbage; past a hello's size, what follows
 *   the rank's challenge, where the proof belongs): the rank must drop or refuse it, never answer
 *   with a byte string of the job token, and still form with the proper connection that follows;
 * - odd: whatever rank 0 sends once the link is up (frames): the rank, waiting for a message,
 *   must end with TETHER_OK or an error, never crash, and free what it kept.
 * The rank's endpoint is closed after every input. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "backends/mesh/mesh.h"
#include "backends/net/frame.h"
#include "backends/net/handshake.h"
#include "core/config.h"
#include "core/errors.h"
#include "tests/support/free_port.h"
#include "tests/support/handshake_client.h"

#define TOKEN "fuzz-token"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int port1;

/* Once per process, before the first input (not LLVMFuzzerInitialize: replay.c would need a weak
 * reference to it, which does not link for macOS). */
static void set_up(void)
{
    static char path[] = "/tmp/tether-fuzz-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    int held[2];
    port1 = tether__test_free_port(&held[1]);
    int port0 = tether__test_free_port(&held[0]);
    if (port0 < 0 || port1 < 0)
        abort();
    dprintf(fd, "[[\"127.0.0.1:%d\"], [\"127.0.0.1:%d\"]]", port0, port1);
    close(fd);
    close(held[0]);
    close(held[1]);
    setenv("TETHER_HOSTFILE", path, 1);
    setenv("TETHER_RANK", "1", 1);
    setenv("TETHER_JOB_TOKEN", TOKEN, 1);
    setenv("TETHER_TIMEOUT", "2", 1);
    setenv("TETHER_TCP_CMA_MIN", "0", 1);
    signal(SIGPIPE, SIG_IGN);
}

typedef struct rank1 {
    pthread_t thread;
    tether__ep *ep;
    int rc;
} rank1;

static void *open_rank1(void *arg)
{
    rank1 *r = arg;
    tether__config cfg;
    int rank, size;
    r->rc = tether__config_load(&cfg);
    if (r->rc == TETHER_OK)
        r->rc = tether__mesh_ops.open(&cfg, &r->ep, &rank, &size);
    return NULL;
}

static int connect_rank1(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port1),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int i = 0; i < 2000; i++) { /* until rank 1 listens (or, done, no more) */
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            return fd;
        close(fd);
        usleep(1000);
    }
    return -1;
}

static void send_all(int fd, const void *p, size_t n)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, 0); /* SIGPIPE is ignored (set_up) */
        if (k <= 0)
            return; /* the rank dropped us: what it does next is what is tested */
        p = (const char *)p + k;
        n -= (size_t)k;
    }
}

static void send_frame(int fd, uint32_t type)
{
    unsigned char b[TETHER__FRAME_SIZE];
    tether__frame f = {.type = type};
    tether__frame_encode(&f, b);
    send_all(fd, b, sizeof b);
}

/* Rank 0's proper connection: the handshake, the empty cross-memory offer and its answer, the
 * empty shared-ring offer, and the word that not every pair has rings. */
static int join_as_rank0(void)
{
    int fd = connect_rank1();
    if (fd < 0) /* the input's own hello formed the link: this one is not needed */
        return -1;
    tether__test_hs hs = {.rank = 0, .size = 2, .token = TOKEN};
    if (tether__test_handshake(fd, &hs) == TETHER__HS_OK) {
        send_frame(fd, TETHER__FRAME_CMA_OFFER);
        send_frame(fd, TETHER__FRAME_CMA_ANSWER);
        send_frame(fd, TETHER__FRAME_SHM_OFFER);
        send_frame(fd, TETHER__FRAME_RINGS_ALL);
    }
    return fd;
}

/* Read what the rank sends on the stray connection until it closes it (or 3 s pass: the rank
 * waits 2 s at most for each message), appending to seen; stop after one message when one. */
static void read_answers(int fd, unsigned char *seen, size_t cap, size_t *n, int one)
{
    struct timeval three = {.tv_sec = 3};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &three, sizeof three);
    for (size_t start = *n; *n < cap && (!one || *n - start < TETHER__HELLO_SIZE);) {
        ssize_t k = recv(fd, seen + *n, one ? TETHER__HELLO_SIZE - (*n - start) : cap - *n, 0);
        if (k <= 0)
            return;
        *n += (size_t)k;
    }
}

/* The stray connection: a hello's worth of the input, the rank's answer, the rest of the input;
 * whatever the rank answered must not hold the token. */
static int stray_connection(const uint8_t *data, size_t size)
{
    unsigned char seen[4 * TETHER__HELLO_SIZE];
    size_t nseen = 0, first = size < TETHER__HELLO_SIZE ? size : TETHER__HELLO_SIZE;
    int fd = connect_rank1();
    if (fd < 0)
        abort();
    send_all(fd, data, first);
    if (first < size) {
        read_answers(fd, seen, sizeof seen, &nseen, 1);
        send_all(fd, data + first, size - first);
    }
    shutdown(fd, SHUT_WR);
    read_answers(fd, seen, sizeof seen, &nseen, 0);
    if (tether__test_holds(seen, nseen, TOKEN))
        abort(); /* a stray learnt the token */
    return fd;
}

/* Rank 1 waits for a 64-byte message (group 0, call 1) until it comes or the link fails. */
static void receive_one(tether__ep *ep)
{
    unsigned char buf[64];
    tether__req *r = NULL;
    tether__tag tag = {.group = 0, .seq = 1, .step = 0, .sig = 7};
    if (tether__mesh_ops.irecv(ep, 0, buf, sizeof buf, tag, &r) != TETHER_OK)
        return;
    for (int done = 0; !done;) {
        if (tether__mesh_ops.test(ep, r, &done) < 0)
            return; /* released by test */
        if (!done)
            tether__mesh_ops.wait(ep, 10);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, set_up);
    if (size < 1)
        return 0;
    rank1 r = {.ep = NULL};
    if (pthread_create(&r.thread, NULL, open_rank1, &r))
        abort();
    int stray = -1;
    if (!(data[0] & 1)) /* a connection that starts with the input, then the real one */
        stray = stray_connection(data + 1, size - 1);
    int fd = join_as_rank0();
    pthread_join(r.thread, NULL);
    if (r.rc == TETHER_OK && fd >= 0 && (data[0] & 1)) {
        send_all(fd, data + 1, size - 1);
        shutdown(fd, SHUT_WR); /* then the end of the stream: the wait ends either way */
        receive_one(r.ep);
    }
    if (r.ep)
        tether__mesh_ops.close(r.ep);
    if (fd >= 0)
        close(fd);
    if (stray >= 0)
        close(stray);
    tether__clear_error();
    return 0;
}
