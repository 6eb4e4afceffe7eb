#!/bin/sh
# tests/config/test_auto_setup.sh - `tether config --auto-setup` against fake hosts whose commands
# change their state: the first run records exactly the expected commands (per host, in order),
# every cable then answers a ping, and a second run changes nothing and writes the same hostfile.
# Without password-less sudo on a host, nothing runs and the commands are printed instead.
# Usage: test_auto_setup.sh TETHER
set -u
TETHER=$1
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tether-autosetup-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
pass() { echo "ok: $*"; }

# config SET HOSTS OUT: one --auto-setup run on the copy of SET in $WORK.
config() {
    TETHER_FAKE_SET=$WORK/$1 TETHER_FAKE_LOG=$WORK/$1.log "$TETHER" config \
        --ssh-command "$HERE/fake_ssh.sh" --hosts "$2" --auto-setup --output "$WORK/$3" \
        >"$WORK/out" 2>"$WORK/err"
}

# The log interleaves hosts (they run in parallel); each host's own order is kept.
sorted_log() { touch "$WORK/$1.log"; sort -s -t: -k1,1 "$WORK/$1.log"; }

twice() {
    set=$1 hosts=$2
    cp -a "$HERE/fixtures/sets/$set" "$WORK/$set"
    config "$set" "$hosts" first.json
    rc=$?
    [ $rc = 0 ] && pass "$set: first run exits 0" || { fail "$set: first run exited $rc"; cat "$WORK/err" >&2; }
    if sorted_log "$set" | diff -u "$HERE/cases/auto_setup_$set.log" - >&2; then
        pass "$set: first run ran exactly the expected commands"
    else
        fail "$set: commands differ from cases/auto_setup_$set.log"
    fi
    grep -q "every cable answers across its addresses" "$WORK/err" &&
        pass "$set: every cable verified" || fail "$set: no verification message"
    before=$(sorted_log "$set")
    config "$set" "$hosts" second.json
    rc=$?
    [ $rc = 0 ] && pass "$set: second run exits 0" || fail "$set: second run exited $rc"
    [ "$before" = "$(sorted_log "$set")" ] && pass "$set: second run ran nothing" ||
        fail "$set: second run ran commands: $(sorted_log "$set" | tail -n +$(( $(echo "$before" | wc -l) + 1 )))"
    grep -q "every host is set up already: nothing to change" "$WORK/err" &&
        pass "$set: second run says nothing changed" || fail "$set: second run did not say so"
    cmp -s "$WORK/first.json" "$WORK/second.json" && pass "$set: same hostfile both times" ||
        fail "$set: the hostfiles differ"
}

twice triangle mac1,mac2,mac3
twice linux2 l1,l2
# The default pool is routed: the addresses come from the fallback, and a second run keeps them.
twice labfull f1,f2

# No password-less sudo on mac2: nothing runs, the commands are printed, exit 1.
cp -a "$HERE/fixtures/sets/triangle" "$WORK/nosudo"
rm "$WORK/nosudo/mac2/sudo"
config nosudo mac1,mac2,mac3 nosudo.json
rc=$?
[ $rc = 1 ] && pass "no sudo: exits 1" || fail "no sudo: exited $rc"
grep -q "mac2 has no password-less sudo" "$WORK/err" && pass "no sudo: names the host" ||
    fail "no sudo: message missing"
[ ! -s "$WORK/nosudo.log" ] && pass "no sudo: ran nothing" || fail "no sudo: ran commands"
grep -q "sudo ifconfig en2 inet 192.168.200.1 netmask 255.255.255.252 up" "$WORK/out" &&
    pass "no sudo: prints the commands" || fail "no sudo: commands not printed"

[ $FAILS = 0 ] || { echo "$FAILS check(s) failed" >&2; exit 1; }
