# tests/launcher/test_blame_exit.sh - the launcher names the rank that failed first when it failed
# with an exit status, not a signal: rank 2 of 8 calls _exit(5) between all-reduces, and the others,
# waiting in the next one, fail and exit 1. An exiting process's stdout and stderr close after its
# sockets, so the others could end first as the kernel saw it: another rank was blamed, and the
# job exited 1, in 12 of 40 tries on a busy machine. First with rank 2's stdout held back well
# past its sockets (exit_mid_job's "slow": every try failed so, 20 of 20), then as it comes.
. "$(dirname "$0")/lib.sh" "$1"
PROG=${2:?usage: $0 path/to/tether path/to/exit_mid_job}

for how in slow plain; do
    before=$FAILS tries=${BLAME_TRIES:-40}
    [ $how = slow ] && tries=${BLAME_SLOW_TRIES:-10}
    for try in $(seq "$tries"); do
        launch -n 8 --timeout 5 -- "$PROG" 2 5 20 65536 $([ $how = slow ] && echo slow)
        check_eq "$how try $try: the job's status is rank 2's" 5 "$RC" >/dev/null
        check_grep "$how try $try: rank 2 named first" \
            '^tether launch: rank 2 exited with status 5(;|$)' "$WORK/err" >/dev/null
        if grep '^tether launch: rank [013-7] ' "$WORK/err" | grep -qv ', after rank 2 failed$'; then
            fail "$how try $try: another rank blamed:"
            grep '^tether launch' "$WORK/err" >&2
        fi
    done
    [ "$FAILS" -eq "$before" ] && pass "$how: $tries tries, rank 2 blamed and status 5 every time"
done
check_no_tmpdir "after the tries"
finish
