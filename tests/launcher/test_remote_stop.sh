# tests/launcher/test_remote_stop.sh - failures and signals over ssh: the first failing rank is
# named with its host, every other rank on every host is stopped, nothing is left behind.
. "$(dirname "$0")/lib.sh" "$1"
. "$(dirname "$0")/../support/sshd.sh"

cat >"$WORK/hosts.json" <<JSON
[{"ssh": "node1", "ips": ["127.0.0.1"]}, {"ssh": "node2", "ips": ["127.0.0.2"]},
 {"ssh": "node3", "ips": ["127.0.0.3"]}]
JSON
# Every "host" is this machine, so ranks run a script from $WORK. Each says its process group
# and temp dir ("<rank> pgid <pgid> <dir>") and leaves a mark; FAIL_RANK waits (at most 60 s)
# until every rank has started (a loaded machine may take seconds per ssh session), then exits.
cat >"$WORK/rank.sh" <<'SH'
echo "$TETHER_RANK pgid $(ps -o pgid= -p $$ | tr -d ' ') $(dirname "$TETHER_HOSTFILE")"
touch "$MARKS/$TETHER_RANK"
if [ "$TETHER_RANK" = "$FAIL_RANK" ]; then
    i=0
    while [ "$(ls "$MARKS" | wc -l)" -lt "$TETHER_SIZE" ] && [ $i -lt 600 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    exit "$FAIL_STATUS"
fi
[ -n "$LEAVE_CHILD" ] && { (trap '' TERM; exec sleep 60) & exit 0; }
[ -n "$IGNORE_TERM" ] && trap '' TERM
sleep 60 &
wait
SH
# run_ranks NAME OPTIONS...: a fresh mark dir, then the job over ssh.
run_ranks() {
    local marks="$WORK/marks.$1"
    shift
    mkdir "$marks"
    launch --hostfile "$WORK/hosts.json" --ssh-command "$SSH_CMD" --env MARKS="$marks" "$@" \
        -- sh "$WORK/rank.sh"
}
pgids() { awk '$2 == "pgid" { print $3 }' "$WORK/out"; }
check_dirs_gone() {
    local d left=""
    for d in $(awk '$2 == "pgid" { print $4 }' "$WORK/out"); do [ -e "$d" ] && left="$left $d"; done
    [ -z "$left" ] && pass "$1: remote temp dirs removed" || fail "$1: temp dirs left:$left"
}

# A rank on node2 exits 5 while the others run: launch exits 5 naming node2, the rest stop.
run_ranks fail -n 2 --env FAIL_RANK=3 --env FAIL_STATUS=5
check_eq "rank on node2 fails: status" 5 "$RC"
check_grep "rank on node2 fails: named" '^tether launch: rank 3 on node2 exited with status 5; stopping the other 5 ranks$' "$WORK/err"
check_eq "every rank started" 6 "$(pgids | wc -l)"
check_groups_gone "rank on node2 fails" $(pgids)
check_dirs_gone "rank on node2 fails"

# The others ignore SIGTERM: SIGKILL reaches them on their hosts after the grace period.
run_ranks ignore --env FAIL_RANK=0 --env FAIL_STATUS=3 --env IGNORE_TERM=1
check_eq "SIGTERM ignored remotely: status" 3 "$RC"
check_grep "SIGKILL announced" '^tether launch: rank [12] on node[23] did not stop within 3 s of SIGTERM; sending SIGKILL$' "$WORK/err"
check_eq "every rank started" 3 "$(pgids | wc -l)"
check_groups_gone "SIGTERM ignored remotely" $(pgids)
check_dirs_gone "SIGTERM ignored remotely"

# Every rank exits 0 at once, leaving a child that ignores SIGTERM: the remote script sends it
# SIGKILL after the grace period, as a local rank's leftovers get; the job succeeds.
start=$(date +%s)
run_ranks leftover --env FAIL_RANK=none --env LEAVE_CHILD=1
elapsed=$(($(date +%s) - start))
check_eq "leftover ignoring SIGTERM: status" 0 "$RC"
[ "$elapsed" -ge 3 ] && [ "$elapsed" -le 30 ] && pass "leftover stopped after the grace period (${elapsed}s)" ||
    fail "leftover: took ${elapsed}s, expected 3..30"
check_groups_gone "leftover ignoring SIGTERM" $(pgids)
check_dirs_gone "leftover ignoring SIGTERM"

# Ctrl-C: SIGINT to the launcher stops every remote rank.
mkdir "$WORK/marks.sigint"
"$TETHER" launch --hostfile "$WORK/hosts.json" --ssh-command "$SSH_CMD" --env MARKS="$WORK/marks.sigint" \
    --env FAIL_RANK=none -- sh "$WORK/rank.sh" </dev/null >"$WORK/out" 2>"$WORK/err" &
bg=$!
wait_for_lines "$WORK/out" 3 60 || fail "ranks did not start"
kill -INT "$bg"
wait "$bg"
check_eq "SIGINT over ssh: status" 130 $?
check_groups_gone "SIGINT over ssh" $(pgids)
check_dirs_gone "SIGINT over ssh"

# start_killable NAME SSH_COMMAND: every rank running under a launcher in the background ($bg).
start_killable() {
    mkdir "$WORK/marks.$1"
    "$TETHER" launch --hostfile "$WORK/hosts.json" --ssh-command "$2" --env MARKS="$WORK/marks.$1" \
        --env FAIL_RANK=none -- sh "$WORK/rank.sh" </dev/null >"$WORK/out" 2>"$WORK/err" &
    bg=$!
    wait_for_lines "$WORK/out" 3 60 || fail "$1: ranks did not start"
}
# check_ranks_end NAME SECONDS: within SECONDS no rank process is left, nor a remote temp dir.
check_ranks_end() {
    if wait_groups_gone "$2" $(pgids); then pass "$1: every rank gone within $2 s"; else
        fail "$1: ranks left $2 s after the launcher died:"
        live_in_groups $(pgids) >&2
    fi
    sleep 0.5 # each script removes its temp dir once its rank is gone
    check_dirs_gone "$1"
}

# SIGKILL to the launcher: its guard kills the ssh clients and stops each remote rank through ssh
# (the sessions share one connection per host here: ControlMaster, so sshd's session lives on).
start_killable sigkill "$SSH_CMD"
kill -KILL "$bg"
wait "$bg"
check_eq "SIGKILL over ssh: status" 137 $?
check_ranks_end "SIGKILL over ssh" 10
check_no_tmpdir "SIGKILL over ssh" # the guard removes it

# The launcher, its guard and its ssh clients all gone at once (its host lost), each session its
# own connection: on each host the script sees its sshd session end and stops the rank itself.
start_killable lost "$SSH_CMD -o ControlMaster=no -o ControlPath=none"
kill -STOP "$bg" # so it starts nothing more: neither it nor its guard may stop the ranks here
for c in $(ps -o pid= --ppid "$bg"); do kill -KILL -- "-$c"; done # the guard, the ssh clients
kill -KILL "$bg"
wait "$bg"
check_ranks_end "connection lost" 10
finish
