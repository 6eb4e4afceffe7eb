#!/bin/sh
# tests/config/test_hostfile_check.sh - `tether hostfile check F`: each form is recognised and
# passes, each problem is explained with its position, exit 0 / 1 / 2 for good / bad / usage.
# Usage: test_hostfile_check.sh TETHER
set -u
TETHER=$1
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=$HERE/../unit/data
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tether-hfcheck-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }

# expect STATUS STREAM TEXT ARGS...: tether hostfile ARGS exits STATUS and STREAM's first line
# is TEXT.
expect() {
    status=$1 stream=$2 text=$3
    shift 3
    "$TETHER" hostfile "$@" >"$WORK/out" 2>"$WORK/err"
    rc=$?
    got=$(head -n 1 "$WORK/$stream")
    if [ "$rc" = "$status" ] && [ "$got" = "$text" ]; then
        pass "hostfile $*"
    else
        fail "hostfile $*: exit $rc, $stream '$got'; expected exit $status, '$text'"
    fi
}

# bad NAME JSON: write JSON to $WORK/NAME.
bad() { printf '%s\n' "$2" >"$WORK/$1"; }

expect 0 out "$DATA/hostfile_launch_list.json: launcher hostfile, 4 host(s), backend not set, 0 env(s): OK" \
    check "$DATA/hostfile_launch_list.json"
expect 0 out "$DATA/hostfile_launch_jaccl.json: launcher hostfile, 4 host(s), backend rdma, 1 env(s), rdma devices: OK" \
    check "$DATA/hostfile_launch_jaccl.json"
expect 0 out "$DATA/hostfile_mlx_ring.json: per-rank hostfile, 4 rank(s), 8 address(es): OK" \
    check "$DATA/hostfile_mlx_ring.json"
expect 0 out "$DATA/hostfile_devices_mlx.json: device matrix, 4 x 4, 6 cable(s): OK" \
    check "$DATA/hostfile_devices_mlx.json"
expect 0 out "$HERE/cases/ring4.json: launcher hostfile, 4 host(s), backend ring, 0 env(s): OK" \
    check "$HERE/cases/ring4.json"

bad ranks.json '[["10.0.0.1:5000"], ["10.0.0.2"]]'
expect 1 err "$WORK/ranks.json: rank 1, address 0: \"10.0.0.2\" has no port; expected \"ip:port\"" \
    check "$WORK/ranks.json"
# An address without its port is a per-rank file's mistake, not a device on the diagonal.
bad noport.json '[["127.0.0.1"]]'
expect 1 err "$WORK/noport.json: rank 0, address 0: \"127.0.0.1\" has no port; expected \"ip:port\"" \
    check "$WORK/noport.json"
bad noport2.json '[["localhost"], ["localhost:5001"]]'
expect 1 err "$WORK/noport2.json: rank 0, address 0: \"localhost\" has no port; expected \"ip:port\"" \
    check "$WORK/noport2.json"
bad devices.json '[[null, "rdma_en2"], ["rdma_en2", null, null]]'
expect 1 err "$WORK/devices.json: row 1 has 3 entries; expected 2 (one per rank, as many as there are rows)" \
    check "$WORK/devices.json"
bad launch.json '{"hosts": [{"ssh": "a", "ips": ["10.0.0.300"]}]}'
expect 1 err "$WORK/launch.json: host 0, ips[0]: \"10.0.0.300\" is not a valid IPv4 address; expected four numbers 0-255 separated by dots" \
    check "$WORK/launch.json"
# Every problem, not only the first: the first on line 1 (as when alone), then one line each.
bad many.json '{"backend": "ringy", "hosts": [{"ssh": "a", "ips": ["10.0.0.300"]}, {"ssh": "b"}, {"ssh": "-c"}], "extra": 1}'
expect 1 err "$WORK/many.json: unknown key \"extra\"; expected \"backend\", \"envs\" and \"hosts\"" \
    check "$WORK/many.json"
if [ "$(wc -l <"$WORK/err")" = 4 ] &&
    [ "$(sed -n 2p "$WORK/err")" = "  also: $WORK/many.json: \"backend\": unknown backend \"ringy\"; expected any, mpi, rdma (or jaccl, jaccl-ring), mesh, ring or singleton" ] &&
    [ "$(sed -n 4p "$WORK/err")" = "  also: $WORK/many.json: host 2: \"ssh\": \"-c\" is an ssh option; expected \"host\" or \"user@host\"" ]; then
    pass "every problem of many.json, one line each"
else
    fail "many.json: expected 4 lines (extra, backend, host 0, host 2), got:"; cat "$WORK/err" >&2
fi
# More than the message holds: as many as fit, then how many more; none is lost from the count.
hosts=""
for i in $(seq 0 59); do hosts="$hosts${hosts:+, }{\"ssh\": \"-h$i\"}"; done
bad sixty.json "[$hosts]"
"$TETHER" hostfile check "$WORK/sixty.json" >"$WORK/out" 2>"$WORK/err"
shown=$(grep -c 'is an ssh option' "$WORK/err")
more=$(sed -n 's/^  and \([0-9][0-9]*\) more$/\1/p' "$WORK/err")
if [ -n "$more" ] && [ $((shown + more)) = 60 ]; then pass "sixty bad hosts: $shown shown and $more more"; else
    fail "sixty bad hosts: $shown shown, 'and ${more:-?} more'"; cat "$WORK/err" >&2
fi
bad syntax.json '[{"ssh": "a"},'
expect 1 err "$WORK/syntax.json: line 2, column 0: invalid JSON: ']' expected near end of file" \
    check "$WORK/syntax.json"
expect 1 err "$WORK/missing.json: cannot open the hostfile: No such file or directory" \
    check "$WORK/missing.json"
# --form overrides the guess: a launcher file read as a per-rank one says why it is not.
expect 1 err "$DATA/hostfile_launch_list.json: rank 0: expected a list of \"ip:port\" strings, got an object" \
    check "$DATA/hostfile_launch_list.json" --form ranks
expect 2 err "tether hostfile: --form matrix: expected launch, ranks or devices" \
    check "$DATA/hostfile_mlx_ring.json" --form matrix
expect 2 err "usage: tether hostfile check FILE [--form launch|ranks|devices]" verify x.json

[ $FAILS = 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
