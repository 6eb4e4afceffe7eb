# tests/launcher/test_exit_status.sh - the job's exit status is the first failing rank's, named on stderr.
. "$(dirname "$0")/lib.sh" "$1"

launch -n 3 -- sh -c 'exit 0'
check_eq "all ranks exit 0" 0 "$RC"
check_eq "no launcher message on success" "" "$(cat "$WORK/err")"

launch -n 3 -- sh -c 'exit 3'
check_eq "every rank exits 3" 3 "$RC"
check_grep "failing rank named" '^tether launch: rank [0-2] exited with status 3' "$WORK/err"

# One rank fails while the others would run for a minute: they are stopped, fast.
start=$(date +%s)
launch -n 4 -- sh -c 'if [ "$TETHER_RANK" = 2 ]; then sleep 0.2; exit 7; fi; sleep 60'
check_eq "rank 2 exits 7" 7 "$RC"
check_grep "rank 2 named" '^tether launch: rank 2 exited with status 7; stopping the other 3 ranks$' "$WORK/err"
elapsed=$(($(date +%s) - start))
[ "$elapsed" -lt 10 ] && pass "others stopped in ${elapsed}s" || fail "others took ${elapsed}s to stop"

launch -n 2 -- sh -c 'if [ "$TETHER_RANK" = 1 ]; then kill -USR1 $$; fi; sleep 60'
check_eq "killed by SIGUSR1 -> 128+10" 138 "$RC"
check_grep "signal named" '^tether launch: rank 1 was killed by signal 10 ' "$WORK/err"

launch -n 2 -- /nonexistent/program
check_eq "missing program -> 127" 127 "$RC"
check_grep "missing program named" "cannot run '/nonexistent/program'" "$WORK/err"

check_no_tmpdir "after failures"
finish
