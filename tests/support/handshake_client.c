/* tests/support/handshake_client.c - the connecting side of the handshake, blocking. */
#include "handshake_client.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "backends/net/socket.h"
#include "core/config.h"
#include "core/random.h"
#include "tether.h"

static int send_msg(int fd, const unsigned char *msg)
{
    for (size_t done = 0; done < TETHER__HELLO_SIZE;) {
        ssize_t n = send(fd, msg + done, TETHER__HELLO_SIZE - done, TETHER__SEND_FLAGS);
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

static int recv_msg(int fd, unsigned char *msg, tether__test_hs *hs)
{
    for (size_t got = 0; got < TETHER__HELLO_SIZE;) {
        ssize_t n = recv(fd, msg + got, TETHER__HELLO_SIZE - got, 0);
        if (n <= 0)
            return -1;
        if (hs->nseen + (size_t)n <= sizeof hs->seen) {
            memcpy(hs->seen + hs->nseen, msg + got, (size_t)n);
            hs->nseen += (size_t)n;
        }
        got += (size_t)n;
    }
    return 0;
}

int tether__test_handshake(int fd, tether__test_hs *hs)
{
    struct timeval five = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &five, sizeof five);
    tether__config cfg;
    tether__hello h;
    tether__hs_msgs m;
    memset(&h, 0, sizeof h);
    h.version = TETHER__PROTO_VERSION;
    h.rank = hs->rank;
    h.size = hs->size;
    h.nlinks = 1;
    snprintf(h.backend, sizeof h.backend, "%s", hs->backend ? hs->backend : "mesh");
    if (tether__config_load(&cfg) == TETHER_OK)
        tether__config_agreed(&cfg, h.settings);
    if (tether__random_bytes(h.nonce, sizeof h.nonce) < 0)
        return -1;
    tether__hello_encode(&h, m[TETHER__HS_HELLO]);
    hs->got_challenge = hs->challenge_proved = 0;
    hs->nseen = 0;
    if (send_msg(fd, m[TETHER__HS_HELLO]) < 0 || recv_msg(fd, m[TETHER__HS_CHALLENGE], hs) < 0 ||
        tether__hello_decode(m[TETHER__HS_CHALLENGE], &h) < 0)
        return -1;
    if (h.status != TETHER__HS_OK)
        return (int)h.status;
    hs->got_challenge = 1;
    hs->challenge_proved = tether__hs_verify(hs->token, m, TETHER__HS_CHALLENGE);
    tether__hs_status_msg(TETHER__HS_OK, m[TETHER__HS_PROOF]);
    tether__hs_prove(hs->token, m, TETHER__HS_PROOF);
    if (send_msg(fd, m[TETHER__HS_PROOF]) < 0 || recv_msg(fd, m[TETHER__HS_VERDICT], hs) < 0 ||
        tether__hello_decode(m[TETHER__HS_VERDICT], &h) < 0)
        return -1;
    return (int)h.status;
}
