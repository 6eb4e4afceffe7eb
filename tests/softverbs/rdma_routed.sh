#!/bin/sh
# tests/softverbs/rdma_routed.sh - ring mode passes routed messages on frame by frame: 64 MiB sends
# from rank 0 to rank 2 of a 4-rank ring over the verbs emulator arrive intact, and rank 1, on the
# way, stays under 32 MiB of memory (whole process, sanitizer runtimes included: about 5 MiB plain,
# 17 under ASan; a few receive slots held, never the message). Holding the message whole, as
# store-and-forward did, peaks above 64 MiB.
# Usage: rdma_routed.sh TETHER_CLI (the emulator's environment set by ctest)
set -u
tether=$1
json=$(mktemp)
trap 'rm -f "$json"' EXIT
"$tether" launch -n 4 --backend rdma -- \
  "$tether" bench -c send_recv --pair 0,2 -b 64M -e 64M -w 0 -n 2 --check --json "$json"
rc=$?
peak=$(sed -n 's/.*"passing_peak_rss_bytes":\([0-9]*\).*/\1/p' "$json")
wrong=$(sed -n 's/.*"wrong":\([0-9]*\).*/\1/p' "$json")
[ $rc -eq 0 ] || { echo "FAIL: tether bench --pair 0,2 over a 4-rank RDMA ring exited $rc"; exit 1; }
[ "${wrong:-x}" = 0 ] || { echo "FAIL: the routed sends arrived with ${wrong:-?} wrong elements"; exit 1; }
[ -n "$peak" ] && [ "$peak" -lt $((32 << 20)) ] ||
  { echo "FAIL: the rank on the way peaked at ${peak:-?} bytes (< 32 MiB wanted for 64 MiB sends)"; exit 1; }
echo "routed 64 MiB sends intact; the rank on the way peaked at $((peak >> 20)) MiB"
