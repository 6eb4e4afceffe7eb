/* tests/fuzz/fuzz_rdma_side.c - libFuzzer harness: the RDMA backend's side-channel decoder (abort
 * and bye messages between two ranks), fed through a real socket pair. The first byte gives the
 * number of links to the peer; the rest is what the peer writes, then it closes. Reading must end
 * in TETHER_OK (a well-formed bye) or an error, never a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backends/rdma/rdma_impl.h"
#include "backends/rdma/side_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (size < 1 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        return 0;
    rdma_ep *ep = calloc(1, sizeof *ep);
    rdma_peer *peers = calloc(2, sizeof *peers);
    if (!ep || !peers)
        abort();
    ep->rank = 0;
    ep->size = 2;
    ep->peers = peers;
    rdma_peer *l = &peers[1];
    l->fd = sv[0];
    l->nlinks = data[0] % (MAX_CABLES + 1);
    for (int k = 0; k < MAX_CABLES; k++) {
        l->link[k].peer = 1;
        l->link[k].lane = k;
    }
    strcpy(l->addr, "127.0.0.1:1");
    /* the peer's bytes arrive in pieces, as a stream may cut them */
    size_t at = 1;
    while (at < size && !ep->err && !l->eof) {
        size_t piece = (size - at) < 700 ? size - at : 700;
        if (write(sv[1], data + at, piece) != (ssize_t)piece)
            break;
        at += piece;
        tether__rdma_side_read(ep, l, 1);
    }
    close(sv[1]);
    while (!ep->err && !l->eof)
        tether__rdma_side_read(ep, l, 1);
    close(sv[0]);
    free(peers);
    free(ep);
    return 0;
}
