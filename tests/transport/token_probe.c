/* tests/transport/token_probe.c - a stray that offers a wrong job token to a rank's port.
 * Usage: token_probe PORT REAL_TOKEN
 * Connects to 127.0.0.1:PORT (retrying for 10 s while the rank is not listening yet), runs the
 * handshake with another token and exits 0 only when the rank refused it ("wrong job token"),
 * its challenge does not verify under the wrong token, and no byte string of REAL_TOKEN is in
 * anything it sent. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/support/handshake_client.h"

static int connect_port(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int i = 0; i < 1000; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            return fd;
        if (fd >= 0)
            close(fd);
        usleep(10 * 1000);
    }
    return -1;
}

int main(int argc, char **argv)
{
    if (argc != 3 || atoi(argv[1]) <= 0 || !argv[2][0]) {
        fprintf(stderr, "usage: token_probe PORT REAL_TOKEN\n");
        return 2;
    }
    int fd = connect_port(atoi(argv[1]));
    if (fd < 0) {
        fprintf(stderr, "token_probe: nothing listens on 127.0.0.1:%s\n", argv[1]);
        return 1;
    }
    tether__test_hs hs = {.rank = 0, .size = 2, .token = "not-the-job-token"};
    int status = tether__test_handshake(fd, &hs);
    close(fd);
    int leaked = tether__test_holds(hs.seen, hs.nseen, argv[2]);
    printf("token_probe: port %s: %zu bytes back, verdict %d (%s), challenge %s, token %s\n",
           argv[1], hs.nseen, status,
           status < 0 ? "none" : tether__hs_status_text((uint32_t)status),
           hs.got_challenge ? (hs.challenge_proved ? "proved under the wrong token" : "unproved")
                            : "absent",
           leaked ? "LEAKED" : "not in it");
    return status == TETHER__HS_BAD_TOKEN && !hs.challenge_proved && !leaked ? 0 : 1;
}
