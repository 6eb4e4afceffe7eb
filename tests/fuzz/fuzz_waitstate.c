/* tests/fuzz/fuzz_waitstate.c - libFuzzer harness: the wait-state records a heartbeat brings
 * (core/waitstate.c's tether__ws_merge), bytes from a peer. The first byte gives the world's size
 * (2 to 65) and the sender's rank; the rest is what the sender's heartbeat carried. Merging must
 * take the records or refuse them whole with a reason, never crash; the table then packs and judges
 * as ever (the records it took are whatever a peer may claim). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/waitstate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int n = 2 + data[0] % 64, from = 1 + data[0] % (n - 1);
    tether__waitstate *ws = tether__ws_new(0, n, 1);
    if (!ws)
        abort();
    uint8_t pending[9] = {0x02}, out[TETHER__WS_BLOB_MAX];
    char why[256];
    tether__ws_wait_begin(ws, 0, 1, "recv", 1, 0, NULL, 0);
    tether__ws_pack(ws, pending, 0, out, sizeof out);
    if (tether__ws_merge(ws, from, data + 1, size - 1, why, sizeof why) < 0 && !why[0])
        abort(); /* a refusal says why */
    tether__ws_pack(ws, pending, 0, out, sizeof out);
    tether__ws_verdict(ws, why, sizeof why);
    tether__ws_wait_end(ws, 1, 1);
    tether__ws_free(ws);
    return 0;
}
