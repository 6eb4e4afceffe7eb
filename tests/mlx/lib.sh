# tests/mlx/lib.sh - start ranks by hand, as a scheduler or an MLX user would, with a clean
# environment: only the variables a test names reach them (no TETHER_* from the caller).
set -u
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tether-mlx-test.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }

# A port base unlikely to be in use: 20000..59000, step 16 per test run.
port_base() { echo $((20000 + (RANDOM % 2400) * 16)); }

# run_ranks N PROGRAM VAR=VALUE...: start N ranks of PROGRAM with env -i plus PATH, the given
# variables, and per rank MLX_RANK=r and whatever rank_env_<r> (a shell variable) holds; wait
# for all. Each rank's output in $WORK/out.r, status in $WORK/rc.r.
run_ranks() {
    local n=$1 prog=$2 r
    shift 2
    for r in $(seq 0 $((n - 1))); do
        local extra_name="rank_env_$r"
        # shellcheck disable=SC2086
        (env -i PATH="$PATH" "$@" MLX_RANK=$r ${!extra_name:-} timeout 60 "$prog" \
            >"$WORK/out.$r" 2>&1; echo $? >"$WORK/rc.$r") &
    done
    wait
}

# check_ranks N BACKEND: every rank exited 0 and printed the N-rank sum on BACKEND.
check_ranks() {
    local n=$1 backend=$2 r sum
    sum="[$((n * (n + 1) / 2)), $((n * (n + 1))), $((3 * n * (n + 1) / 2)), $((2 * n * (n + 1)))]"
    for r in $(seq 0 $((n - 1))); do
        if [ "$(cat "$WORK/rc.$r")" = 0 ] &&
            grep -qxF "rank $r of $n ($backend): sum = $sum" "$WORK/out.$r"; then
            pass "rank $r: $backend, sum $sum"
        else
            fail "rank $r (status $(cat "$WORK/rc.$r")), expected $backend and $sum:"
            sed 's/^/  | /' "$WORK/out.$r" >&2
        fi
    done
}
