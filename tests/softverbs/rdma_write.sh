#!/bin/sh
# tests/softverbs/rdma_write.sh - RC's rendezvous over the verbs emulator: rdma_write MODE at N ranks
# must finish with every element right, and each rank's TETHER_VERBOSE=1 line at close must show
# (big, late, fresh) bytes taken by RDMA WRITE, (every mode) none copied out of receive slots for a
# message from TETHER_RDMA_WRITE_MIN up, and message registrations within their bound; and (big) the
# emulator's counts (SOFTVERBS_STATS): a few SENDs per WRITE, where frames take 64 per 4 MiB.
# Usage: rdma_write.sh TETHER_CLI RDMA_WRITE N MODE [HOSTFILE] (the emulator's environment set by
# ctest; HOSTFILE: N ranks at its addresses, connected through rdma_cm, else a device matrix)
set -u
tether=$1 prog=$2 n=$3 mode=$4 hosts=${5:-}
out=$(mktemp) stats=$(mktemp)
trap 'rm -f "$out" "$stats"' EXIT
if [ -n "$hosts" ]; then set -- --hostfile "$hosts"; else set -- -n "$n"; fi
SOFTVERBS_STATS=$stats TETHER_VERBOSE=1 "$tether" launch "$@" --backend rdma -- "$prog" "$mode" >"$out" 2>&1
rc=$?
lines=$(grep -c 'bytes by RDMA WRITE' "$out")
[ $rc -eq 0 ] || { tail -20 "$out"; echo "FAIL: rdma_write $mode at N = $n exited $rc"; exit 1; }
[ "$lines" -eq "$n" ] || { echo "FAIL: $lines ranks of $n told their rendezvous counts"; exit 1; }
sed -n 's/.*rank \([0-9]*\) took \([0-9]*\) bytes by RDMA WRITE .* \([0-9]*\) of them of messages .* at most \([0-9]*\) message registrations at once (bound \([0-9]*\)).*/\1 \2 \3 \4 \5/p' "$out" |
  while read -r rank written copied peak bound; do
    echo "rank $rank: $written bytes by WRITE, $copied large-message bytes copied, $peak of $bound registrations"
    [ "$copied" -eq 0 ] || { echo "FAIL: rank $rank copied $copied bytes of large messages"; exit 1; }
    [ "$peak" -le "$bound" ] || { echo "FAIL: rank $rank held $peak registrations (bound $bound)"; exit 1; }
    [ "$mode" = mixed ] || [ "$written" -gt 0 ] || [ "$rank" -gt 1 ] ||
      { echo "FAIL: rank $rank took nothing by RDMA WRITE"; exit 1; }
  done || exit 1
if [ "$mode" = big ]; then
  sed -n 's/.* messages=\([0-9]*\) .* writes=\([0-9]*\) .*/\1 \2/p' "$stats" |
    while read -r messages writes; do
      sends=$((messages - writes))
      echo "emulator: $sends SENDs and $writes WRITEs"
      [ "$writes" -gt 0 ] && [ "$sends" -le $((writes * 8)) ] ||
        { echo "FAIL: $sends SENDs for $writes WRITEs (a few per WRITE wanted)"; exit 1; }
    done || exit 1
fi
echo "rdma_write $mode at N = $n: ok"
