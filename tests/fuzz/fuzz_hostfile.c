/* tests/fuzz/fuzz_hostfile.c - libFuzzer harness: the three hostfile parsers (per-rank, launcher,
 * device matrix) on arbitrary text. The first byte picks the parser; the rest is the file. Any
 * input must end in TETHER_OK or TETHER_ECONFIG with a message, never a crash or a leak. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hostfile/hostfile.h"
#include "tether.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    int rc;
    switch (data[0] % 3) {
    case 0: {
        tether__rank_hosts h;
        if ((rc = tether__hostfile_parse_ranks(text, "fuzz.json", &h)) == TETHER_OK)
            tether__rank_hosts_free(&h);
        break;
    }
    case 1: {
        tether__launch_hosts h;
        if ((rc = tether__hostfile_parse_launch(text, "fuzz.json", &h)) == TETHER_OK)
            tether__launch_hosts_free(&h);
        break;
    }
    default: {
        tether__device_matrix m;
        if ((rc = tether__hostfile_parse_devices(text, "fuzz.json", &m)) == TETHER_OK)
            tether__device_matrix_free(&m);
        break;
    }
    }
    if (rc != TETHER_OK && rc != TETHER_ECONFIG && rc != TETHER_ENOMEM)
        abort(); /* a parser answers OK or names what is wrong */
    free(text);
    return 0;
}
