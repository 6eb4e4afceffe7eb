# tests/launcher/test_blame.sh - the launcher names the rank that failed first, whatever order the
# ranks are reaped in: rank 2 of 4 is SIGKILLed mid-stream of 16 MiB all-reduces, and the others
# fail within milliseconds of it (they were blamed instead in 2 of 5 tries). Repeated, since it
# is a race; the others' own failures may follow, labelled as such.
. "$(dirname "$0")/lib.sh" "$1"

tries=${BLAME_TRIES:-6}
for try in $(seq "$tries"); do
    launch -n 4 -- sh -c 'if [ "$TETHER_RANK" = 2 ]; then (sleep 0.5; kill -9 $$) & fi
        exec "$0" bench -c all_reduce -b 16M -e 16M -w 100000 -n 100000 -t 1000' "$TETHER"
    check_eq "try $try: the job's status is rank 2's SIGKILL" 137 "$RC"
    check_grep "try $try: rank 2 named first" \
        '^tether launch: rank 2 was killed by signal 9 \(Killed\)(;|$)' "$WORK/err"
    if grep '^tether launch: rank [013] ' "$WORK/err" | grep -qv ', after rank 2 failed$'; then
        fail "try $try: another rank blamed:"
        grep '^tether launch' "$WORK/err" >&2
    fi
done
check_no_tmpdir "after the tries"
finish
