#!/bin/sh
# tests/config/test_real_sshd.sh - `tether config` over a real ssh: an sshd started here on
# 127.0.0.1 (keys made here) lets the tool probe this Linux machine. It has no Thunderbolt, so
# the tool must say so and fail; with --over ethernet it must write a hostfile that checks out.
# Skips (exit 77) when sshd or ssh is not installed.
# Usage: test_real_sshd.sh TETHER
set -u
TETHER=$1
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
if [ ! -x "$SSHD" ] || ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; then
    echo "skipped: needs sshd, ssh and ssh-keygen (openssh-server, openssh-client)"
    exit 77
fi
# sshd as root needs its privilege separation directory, which the sshd service would make (a
# fresh container has none until then): make it, as tests/launcher/sshd.sh does.
if [ "$(id -u)" = 0 ] && ! mkdir -p /run/sshd; then
    echo "skipped: sshd as root needs its privilege separation directory /run/sshd"
    exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tether-sshd-test.XXXXXX")
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }

ssh-keygen -q -t ed25519 -N '' -f "$WORK/host_key" || exit 1
ssh-keygen -q -t ed25519 -N '' -f "$WORK/user_key" || exit 1
cp "$WORK/user_key.pub" "$WORK/authorized_keys"
chmod 600 "$WORK/authorized_keys"

# start_sshd PORT: 0 once it accepts a login (within 10 s), 1 if it died (port taken).
start_sshd() {
    cat >"$WORK/sshd_config" <<CFG
Port $1
ListenAddress 127.0.0.1
HostKey $WORK/host_key
AuthorizedKeysFile $WORK/authorized_keys
PidFile $WORK/sshd.pid
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
LogLevel ERROR
CFG
    "$SSHD" -D -e -f "$WORK/sshd_config" 2>"$WORK/sshd.log" &
    PID=$!
    SSH="ssh -F /dev/null -p $1 -i $WORK/user_key -o IdentitiesOnly=yes -o BatchMode=yes"
    SSH="$SSH -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
    SSH="$SSH -o ConnectTimeout=5"
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        kill -0 "$PID" 2>/dev/null || { PID=; return 1; }
        $SSH 127.0.0.1 true 2>/dev/null && return 0
        sleep 1
    done
    return 1
}

port=$((20000 + $$ % 20000))
started=0
for try in 0 1 2; do
    if start_sshd $((port + try * 7)); then started=1; break; fi
done
if [ $started = 0 ]; then
    echo "FAIL: sshd did not start:" >&2
    cat "$WORK/sshd.log" >&2
    exit 1
fi
pass "sshd up on 127.0.0.1"

"$TETHER" config --hosts 127.0.0.1 --ssh-command "$SSH" >"$WORK/out" 2>"$WORK/err"
rc=$?
[ $rc = 1 ] && pass "thunderbolt: exits 1" || fail "thunderbolt: exited $rc"
grep -q "no Thunderbolt cable found between the hosts" "$WORK/err" &&
    pass "thunderbolt: says there is no Thunderbolt" || { fail "thunderbolt: message"; cat "$WORK/err" >&2; }
grep -Eq "^  127\.0\.0\.1  Linux " "$WORK/out" && pass "thunderbolt: probed a Linux host" ||
    { fail "thunderbolt: host line"; cat "$WORK/out" >&2; }

"$TETHER" config --hosts 127.0.0.1 --ssh-command "$SSH" --over ethernet \
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
