# tests/launcher/test_stop.sh - stopping: SIGKILL after the grace period, leftovers, signals to
# the launcher; afterwards no rank process and no temp dir is left.
. "$(dirname "$0")/lib.sh" "$1"

pgids() { sed -n 's/^.*pgid \([0-9][0-9]*\)$/\1/p' "$1"; }

# Rank 0 fails; ranks 1 and 2 ignore SIGTERM (and so does their child): SIGKILL after 3 s.
start=$(date +%s)
launch -n 3 -- sh -c 'echo "pgid $$"; if [ "$TETHER_RANK" = 0 ]; then sleep 0.5; exit 3; fi
    trap "" TERM; sleep 30 & wait'
elapsed=$(($(date +%s) - start))
check_eq "SIGTERM ignored: status of rank 0" 3 "$RC"
check_grep "SIGKILL announced" '^tether launch: rank [12] did not stop within 3 s of SIGTERM; sending SIGKILL$' "$WORK/err"
[ "$elapsed" -ge 3 ] && [ "$elapsed" -le 8 ] && pass "stopped after the grace period (${elapsed}s)" ||
    fail "took ${elapsed}s, expected 3..8"
check_groups_gone "SIGTERM ignored" $(pgids "$WORK/out")

# A rank that exits 0 leaving a background child: the child is stopped, the job exits 0 at once.
start=$(date +%s)
launch -n 2 -- sh -c 'echo "pgid $$"; sleep 30 & exit 0'
check_eq "leftover child: status" 0 "$RC"
[ $(($(date +%s) - start)) -lt 3 ] && pass "leftover child stopped at once" || fail "leftover child took long"
check_groups_gone "leftover child" $(pgids "$WORK/out")

# start_bg ARGS...: the launcher in the background, its ranks print "pgid N" and run until stopped.
start_bg() {
    "$TETHER" launch "$@" </dev/null >"$WORK/out" 2>"$WORK/err" &
    BG=$!
    wait_for_lines "$WORK/out" 3 20 || fail "ranks did not start"
}

# SIGINT to the launcher (Ctrl-C): every rank and its children stop, status 130, temp dir gone.
start_bg -n 3 -- sh -c 'echo "pgid $$"; sleep 30 & wait'
[ -n "$(find "$WORK" -maxdepth 1 -name 'tether-launch-*')" ] && pass "temp dir exists while running" ||
    fail "no temp dir while running"
kill -INT "$BG"
wait "$BG"
check_eq "SIGINT: status 128+2" 130 $?
check_grep "SIGINT reported" '^tether launch: got signal 2 \(Interrupt\); stopping 3 ranks$' "$WORK/err"
check_groups_gone "SIGINT" $(pgids "$WORK/out")
check_no_tmpdir "SIGINT"

# SIGTERM to the launcher while ranks ignore SIGTERM, then a second signal: SIGKILL at once.
start_bg -n 3 -- sh -c 'trap "" TERM; echo "pgid $$"; sleep 30 & wait'
start=$(date +%s)
kill -TERM "$BG"
sleep 0.5
kill -INT "$BG"
wait "$BG"
check_eq "SIGTERM then SIGINT: status 128+15" 143 $?
check_grep "second signal kills" 'got signal 2 \(Interrupt\) again; killing every rank now$' "$WORK/err"
[ $(($(date +%s) - start)) -lt 3 ] && pass "second signal did not wait for the grace period" ||
    fail "second signal waited"
check_groups_gone "second signal" $(pgids "$WORK/out")
check_no_tmpdir "second signal"
finish
