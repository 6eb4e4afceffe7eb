#!/bin/sh
# tests/transport/test_token_ports.sh TETHER TOKEN_PROBE ALL_SUM BACKEND...
# Every listening port of every backend refuses a stray that offers a wrong job token and tells it
# nothing of the real one (token_probe); the job then runs as if nothing had happened.
# mesh, ring: tether launch starts 2 ranks; rank 1 starts all_sum, and every port its process
# listens on (ss) is probed before rank 0 starts. rdma (the emulator's environment comes from
# ctest): its side channels form through the coordinator bootstrap, whose port rank 0 holds while
# rank 1 is probing it; the side channels' own ports accept through the same code (backends/net/
# setup.c) as mesh's. coordinator: rank 0 of a bootstrap started by hand, probed the same way.
set -u
tether=$1 probe=$2 all_sum=$3
shift 3
fail=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for backend in "$@"; do
    rm -f "$dir/probed"
    if [ "$backend" = coordinator ]; then
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        export TETHER_COORDINATOR=127.0.0.1:$port TETHER_SIZE=2 TETHER_JOB_TOKEN=coordinator-secret
        TETHER_RANK=0 "$all_sum" >"$dir/out" 2>&1 &
        r0=$!
        "$probe" "$port" "$TETHER_JOB_TOKEN" >"$dir/probe" || fail=1
        TETHER_RANK=1 "$all_sum" >>"$dir/out" 2>&1 || fail=1
        wait $r0 || fail=1
        cat "$dir/probe" >>"$dir/out"
        unset TETHER_COORDINATOR TETHER_SIZE TETHER_JOB_TOKEN
    else
        # shellcheck disable=SC2016 # expanded by the rank's shell
        "$tether" launch -n 2 --backend "$backend" -- sh -c '
            probe=$0 all_sum=$1 dir=$2
            if [ -n "${MLX_JACCL_COORDINATOR:-}" ]; then
                [ "$TETHER_RANK" = 0 ] && exec "$all_sum"
                "$probe" "${MLX_JACCL_COORDINATOR##*:}" "$TETHER_JOB_TOKEN" || exit 1
                exec "$all_sum"
            fi
            if [ "$TETHER_RANK" = 0 ]; then
                for i in $(seq 200); do [ -e "$dir/probed" ] && break; sleep 0.1; done
                exec "$all_sum"
            fi
            "$all_sum" & pid=$!
            ports=
            for i in $(seq 100); do
                ports=$(ss -ltnpH | grep "pid=$pid," | awk "{print \$4}" | sed "s/.*://")
                [ -n "$ports" ] && break
                sleep 0.1
            done
            [ -n "$ports" ] || { echo "rank 1 listens on no port"; touch "$dir/probed"; exit 1; }
            ok=0
            for p in $ports; do "$probe" "$p" "$TETHER_JOB_TOKEN" || ok=1; done
            touch "$dir/probed"
            wait $pid && exit $ok' "$probe" "$all_sum" "$dir" >"$dir/out" 2>&1 || fail=1
    fi
    cat "$dir/out"
    grep -q "token_probe: port" "$dir/out" || { echo "FAIL: $backend: no port was probed"; fail=1; }
    grep -q "sum = \[3" "$dir/out" || { echo "FAIL: $backend: the job did not run after the probe"; fail=1; }
done
[ $fail = 0 ] && echo "token_ports: every port refused the stray and told it nothing"
exit $fail
