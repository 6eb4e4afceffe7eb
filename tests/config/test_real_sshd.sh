#!/bin/sh
# tests/config/test_real_sshd.sh - `tether config` over a real ssh: an sshd started here on
# 127.0.0.1 (tests/support/sshd.sh) lets the tool probe this Linux machine. It has no Thunderbolt,
# so the tool must say so and fail; with --over ethernet it must write a hostfile that checks out.
# Skips (exit 77) where sshd cannot run (tests/support/sshd.sh).
# Usage: test_real_sshd.sh TETHER
set -u
TETHER=$1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tether-sshd-test.XXXXXX")
. "$(dirname "$0")/../support/sshd.sh"
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }

"$TETHER" config --hosts node1 --ssh-command "$SSH_CMD" >"$WORK/out" 2>"$WORK/err"
rc=$?
[ $rc = 1 ] && pass "thunderbolt: exits 1" || fail "thunderbolt: exited $rc"
grep -q "no Thunderbolt cable found between the hosts" "$WORK/err" &&
    pass "thunderbolt: says there is no Thunderbolt" || { fail "thunderbolt: message"; cat "$WORK/err" >&2; }
grep -Eq "^  node1  Linux " "$WORK/out" && pass "thunderbolt: probed a Linux host" ||
    { fail "thunderbolt: host line"; cat "$WORK/out" >&2; }

"$TETHER" config --hosts node1 --ssh-command "$SSH_CMD" --over ethernet \
    --output "$WORK/hostfile.json" >"$WORK/out" 2>"$WORK/err"
rc=$?
[ $rc = 0 ] && pass "ethernet: exits 0" || { fail "ethernet: exited $rc"; cat "$WORK/err" >&2; }
"$TETHER" hostfile check "$WORK/hostfile.json" >"$WORK/check" 2>&1 &&
    pass "ethernet: the hostfile checks out" || { fail "ethernet: hostfile check"; cat "$WORK/check" >&2; }
# The address written is one this machine has (on its default-route interface when there is one).
ip=$(sed -n 's/^ *"\([0-9.]*\)"$/\1/p' "$WORK/hostfile.json" | head -n 1)
if [ -n "$ip" ] && ip -4 -o addr show | grep -q "inet $ip/"; then
    pass "ethernet: ips holds $ip, an address of this machine"
else
    fail "ethernet: ips '$ip' is not an address of this machine"
    cat "$WORK/hostfile.json" >&2
fi

[ $FAILS = 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
