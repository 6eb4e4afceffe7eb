# tests/launcher/test_launcher_killed.sh - ranks die with the launcher: SIGKILL to the launcher
# (which cannot stop them itself) and, within a few seconds, no process of any rank is left, a
# child a rank started included (the guard kills each rank's process group). Before the guard
# they ran on, reparented to init, until their sleep ended.
. "$(dirname "$0")/lib.sh" "$1"

pgids() { sed -n 's/^.*pgid \([0-9][0-9]*\)$/\1/p' "$WORK/out"; }

"$TETHER" launch -n 3 -- sh -c 'echo "pgid $$"; sleep 300 & wait' </dev/null >"$WORK/out" \
    2>"$WORK/err" &
bg=$!
wait_for_lines "$WORK/out" 3 20 || fail "ranks did not start"
check_eq "every rank started" 3 "$(pgids | wc -l)"
[ -n "$(live_in_groups $(pgids))" ] && pass "ranks running before the kill" || fail "no rank running"
kill -KILL "$bg"
wait "$bg"
check_eq "launcher killed" 137 $?
if wait_groups_gone 5 $(pgids); then pass "every rank gone within 5 s"; else
    fail "ranks left 5 s after the launcher died:"
    live_in_groups $(pgids) >&2
fi
check_grep "the guard says so" '^tether launch: the launcher died; killed its 3 ranks$' "$WORK/err"
sleep 0.2 # the guard removes the temp dir after the kill
check_no_tmpdir "launcher killed"

# A job that ends well leaves nothing for the guard to do: no message, status 0.
launch -n 2 -- sh -c 'exit 0'
check_eq "a job that succeeds: status" 0 "$RC"
check_eq "a job that succeeds: no message" "" "$(cat "$WORK/err")"
finish
