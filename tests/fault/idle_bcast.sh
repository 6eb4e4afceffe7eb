#!/usr/bin/env bash
# tests/fault/idle_bcast.sh - stall_test's idle_bcast (ranks 1 and 2 wait 40 s in a broadcast while
# rank 0 is busy outside tether, then get its data) on several backends at once: the runs are
# sleeps, so one test slot holds them all instead of one 40 s slot each.
# Usage: idle_bcast.sh TETHER STALL_TEST BACKEND[:VAR=VALUE|...] ...
#   e.g. idle_bcast.sh tether stall_test mesh ring "rdma:TETHER_IBVERBS_LIB=/x.so|TETHER_IBV_DEVICES=/d.json"
set -u
tether=$1 stall=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pids=() names=()
for spec in "$@"; do
    backend=${spec%%:*} vars=()
    [ "$spec" != "$backend" ] && IFS="|" read -r -a vars <<<"${spec#*:}"
    env ${vars[@]+"${vars[@]}"} "$tether" launch -n 3 --backend "$backend" -- "$stall" idle_bcast \
        >"$work/$backend" 2>&1 &
    pids+=($!) names+=("$backend")
done
failed=0
for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    rc=$?
    sed "s/^/${names[$i]}: /" "$work/${names[$i]}"
    if [ $rc -ne 0 ]; then
        echo "FAIL: ${names[$i]}: exit $rc"
        failed=1
    fi
done
[ $failed -eq 0 ] && echo "idle_bcast: passed on $*"
exit $failed
