#!/usr/bin/env bash
# tests/coll/link_mismatch.sh TETHER_BIN - two mesh ranks that count different cables between them
# (rank 0's hostfile lists 2 loopback addresses for each rank, rank 1's only 1 for rank 0): forming
# the group fails on both, rank 1's error naming both ranks and both counts, within seconds.
set -uo pipefail
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
read -r p0 p1 p2 p3 < <(python3 "$(dirname "$0")/../support/free_ports.py" 4)
echo "[[\"127.0.0.1:$p0\",\"127.0.0.2:$p1\"],[\"127.0.0.1:$p2\",\"127.0.0.2:$p3\"]]" >"$dir/h0"
echo "[[\"127.0.0.1:$p0\"],[\"127.0.0.1:$p2\",\"127.0.0.2:$p3\"]]" >"$dir/h1"
export TETHER_JOB_TOKEN=link-mismatch TETHER_BACKEND=mesh TETHER_TIMEOUT=20
for r in 0 1; do
  TETHER_RANK=$r TETHER_HOSTFILE=$dir/h$r timeout 30 "$bin" bench -c all_reduce -b 8 -e 8 -n 1 \
    >"$dir/r$r" 2>&1 &
  pids[r]=$!
done
for r in 0 1; do wait "${pids[r]}"; rc[r]=$?; done
cat "$dir/r0" "$dir/r1"
[ "${rc[0]}" -ne 0 ] && [ "${rc[1]}" -ne 0 ] && [ "${rc[0]}" -ne 124 ] && [ "${rc[1]}" -ne 124 ] ||
  { echo "FAIL: both ranks must fail, not time out (exit ${rc[0]}, ${rc[1]})"; exit 1; }
grep -q 'rank 1: .*2 links from rank 0 to rank 1, where rank 1 counts 1' "$dir/r1" ||
  { echo "FAIL: rank 1 did not name both ranks and counts"; exit 1; }
grep -q 'rank 0: .*refused our connection.*rank 0 opens 2 links to rank 1' "$dir/r0" ||
  { echo "FAIL: rank 0 did not say how many links it opened"; exit 1; }
echo "PASS"
