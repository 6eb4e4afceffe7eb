# tests/launcher/test_remote_coll.sh - real collectives over ssh: examples/all_sum and the
# collective suite (tests/coll, --quick) on 3 loopback "hosts" x 2 ranks, for each backend built in.
. "$(dirname "$0")/lib.sh" "$1"
ALL_SUM=${2:?usage: $0 tether all_sum [coll_suite]}
COLL_SUITE=${3:-}
. "$(dirname "$0")/../support/sshd.sh"

cat >"$WORK/hosts.json" <<JSON
[{"ssh": "node1", "ips": ["127.0.0.1"]}, {"ssh": "node2", "ips": ["127.0.0.2"]},
 {"ssh": "node3", "ips": ["127.0.0.3"]}]
JSON
# The backends `tether check` calls usable here (not "not usable here: ..."), singleton aside, and
# mpi, whose ranks MPI's own launcher starts (tests/mpi).
backends=$("$TETHER" check | awk '/^backends:/ { on = 1; next }
    on && /^  / { if ($1 != "singleton" && $1 != "mpi" && $2 ~ /^usable/) print $1; next } { on = 0 }')
for b in $backends; do
    launch --hostfile "$WORK/hosts.json" -n 2 --backend "$b" --ssh-command "$SSH_CMD" --timeout 60 \
        --starting-port "$(free_port_base 8)" -- "$ALL_SUM"
    check_eq "$b: all_sum over ssh exits 0" 0 "$RC" || sed 's/^/  | /' "$WORK/err" >&2
    check_eq "$b: every rank has the sum" "0 1 2 3 4 5" \
        "$(sed -n "s/^rank \([0-5]\) of 6 ($b): sum = \[21, 42, 63, 84\]$/\1/p" "$WORK/out" | sort | paste -sd' ')"
    [ -n "$COLL_SUITE" ] || continue
    launch --hostfile "$WORK/hosts.json" -n 2 --backend "$b" --ssh-command "$SSH_CMD" --timeout 60 \
        --starting-port "$(free_port_base 8)" -- "$COLL_SUITE" --quick
    check_eq "$b: collective suite over ssh exits 0" 0 "$RC" || sed 's/^/  | /' "$WORK/err" >&2
    check_grep "$b: collective suite passed" "^coll_suite: 6 ranks over $b: all checks passed$" "$WORK/out"
done
[ -n "$backends" ] || fail "no backend listed by tether check"
finish
