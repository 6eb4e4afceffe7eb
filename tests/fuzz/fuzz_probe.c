/* tests/fuzz/fuzz_probe.c - libFuzzer harness: `tether config`'s parser of what a host's probe
 * printed (its "@@tether NAME ARG" sections: system_profiler JSON, ifconfig, networksetup, sysfs,
 * `ip` output) on arbitrary text. It must answer 0 or -1 with a reason, never crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tool/config_tool.h"
#include "config_tool/probe_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    ct_host h;
    memset(&h, 0, sizeof h);
    snprintf(h.name, sizeof h.name, "fuzz-host");
    ct_probe_parse(&h, text);
    free(text);
    return 0;
}
