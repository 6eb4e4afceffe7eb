#!/bin/sh
# tests/config/run_case.sh - run one `tether config` case against fake hosts and compare stdout,
# stderr, the exit status (and the --output file) with the expected files, byte for byte.
# Usage: run_case.sh TETHER CASE     (CASE names cases/CASE.case; see cases/README.md)
# With TETHER_TEST_UPDATE=1 the expected files are rewritten instead: review the diff.
set -u
TETHER=$1
NAME=$2
HERE=$(cd "$(dirname "$0")" && pwd)
CASES=$HERE/cases
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tether-config-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

SET= ARGS= STATUS=0
. "$CASES/$NAME.case"
ARGS=$(echo "$ARGS" | sed "s,@OUT@,$WORK/hostfile.json,g; s,@CASES@,$CASES,g")

# shellcheck disable=SC2086 # ARGS is a word list on purpose
TETHER_FAKE_SET=$HERE/fixtures/sets/$SET "$TETHER" config --ssh-command "$HERE/fake_ssh.sh" \
    $ARGS >"$WORK/out" 2>"$WORK/err"
RC=$?
# The temp directory differs on every run: name it the way the expected files do.
for s in out err; do
    sed -i "s,$WORK/,@WORK@/,g" "$WORK/$s"
done

if [ "${TETHER_TEST_UPDATE:-0}" = 1 ]; then
    cp "$WORK/out" "$CASES/$NAME.out"
    cp "$WORK/err" "$CASES/$NAME.err"
    [ -f "$WORK/hostfile.json" ] && cp "$WORK/hostfile.json" "$CASES/$NAME.json"
    sed -i "s/^STATUS=.*/STATUS=$RC/" "$CASES/$NAME.case"
    echo "updated $NAME (status $RC)"
    exit 0
fi

FAIL=0
if [ "$RC" != "$STATUS" ]; then
    echo "FAIL $NAME: exit status $RC, expected $STATUS" >&2
    FAIL=1
fi
for s in out err; do
    if ! diff -u "$CASES/$NAME.$s" "$WORK/$s" >&2; then
        echo "FAIL $NAME: std$s differs from cases/$NAME.$s (diff above)" >&2
        FAIL=1
    fi
done
if [ -f "$CASES/$NAME.json" ] && ! diff -u "$CASES/$NAME.json" "$WORK/hostfile.json" >&2; then
    echo "FAIL $NAME: the hostfile differs from cases/$NAME.json (diff above)" >&2
    FAIL=1
fi
[ "$FAIL" = 0 ] && echo "ok $NAME"
exit "$FAIL"
