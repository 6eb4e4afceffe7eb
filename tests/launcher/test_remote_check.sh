# tests/launcher/test_remote_check.sh - `tether check` over ssh on three loopback "hosts": every
# host's report and the matrices; an unreachable host makes it fail with ssh's error.
. "$(dirname "$0")/lib.sh" "$1"
. "$(dirname "$0")/../support/sshd.sh"

cat >"$WORK/hosts.json" <<JSON
[{"ssh": "node1", "ips": ["127.0.0.1"]}, {"ssh": "node2", "ips": ["127.0.0.2"]},
 {"ssh": "node3", "ips": ["127.0.0.3"]}]
JSON
"$TETHER" check --hostfile "$WORK/hosts.json" --ssh-command "$SSH_CMD" --starting-port "$(free_port_base 4)" \
    --bytes 4M </dev/null >"$WORK/out" 2>"$WORK/err"
rc=$?
check_eq "a report per host" 3 "$(grep -c '^tether [0-9.]* on ' "$WORK/out")"
check_grep "links line" '^links over mesh, 3 ranks, 4194304 bytes' "$WORK/out"
check_eq "matrix rows" 6 "$(grep -c '^  r[0-9] ' "$WORK/out")"
if grep -q '^warning: ' "$WORK/out"; then check_eq "warning -> exit 1" 1 "$rc"; else check_eq "exit 0" 0 "$rc"; fi

"$TETHER" check --hosts node1,node9 --ssh-command "$SSH_CMD" --bytes 1M </dev/null >"$WORK/out" 2>"$WORK/err"
check_eq "unreachable host: ssh's status" 255 $?
check_grep "unreachable host named" '^tether launch: rank 1 on node9 exited with status 255' "$WORK/err"
finish
