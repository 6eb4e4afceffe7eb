# tests/launcher/test_remote.sh - launching over ssh to a real sshd on loopback: files delivered,
# environment, quoting, working directory, stdin, local-host detection, unreachable hosts.
. "$(dirname "$0")/lib.sh" "$1"
. "$(dirname "$0")/../support/sshd.sh"

cat >"$WORK/hosts.json" <<JSON
{"envs": ["FROM_HOSTFILE=yes it is"],
 "hosts": [{"ssh": "node1", "ips": ["127.0.0.1"]},
           {"ssh": "node2", "ips": ["127.0.0.2"]},
           {"ssh": "node3", "ips": ["127.0.0.3"]}]}
JSON
show='echo "$TETHER_RANK env $TETHER_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR:$MASTER_PORT $TETHER_JOB_TOKEN [$FROM_HOSTFILE] [$FROM_CLI]"
echo "$TETHER_RANK file $(tr -d " \n" <"$TETHER_HOSTFILE")"; echo "$TETHER_RANK dir $(dirname "$TETHER_HOSTFILE")"
echo "$TETHER_RANK ssh ${SSH_CONNECTION:-none}"'

launch --hostfile "$WORK/hosts.json" -n 2 --starting-port 41000 --ssh-command "$SSH_CMD" \
    --env 'FROM_CLI=a '\''quoted'\'' $value' -- sh -c "$show"
check_eq "3 hosts x 2 ranks exit 0" 0 "$RC"
token=$(awk '$1 == 0 && $2 == "env" { print $7 }' "$WORK/out")
for r in 0 1 2 3 4 5; do
    host=$((r / 2 + 1))
    check_eq "rank $r environment" \
        "$r env 6 $((r % 2)) 2 127.0.0.1:41006 $token [yes it is] [a 'quoted' \$value]" \
        "$(grep "^$r env " "$WORK/out")"
    check_eq "rank $r per-rank hostfile delivered" \
        "$r file [[\"127.0.0.1:41000\"],[\"127.0.0.1:41001\"],[\"127.0.0.2:41002\"],[\"127.0.0.2:41003\"],[\"127.0.0.3:41004\"],[\"127.0.0.3:41005\"]]" \
        "$(grep "^$r file " "$WORK/out")"
    grep -q "^$r ssh .* 127\.0\.0\.$host [0-9]*$" "$WORK/out" && pass "rank $r ran through ssh on node$host" ||
        fail "rank $r: $(grep "^$r ssh" "$WORK/out")"
done
for d in $(awk '$2 == "dir" { print $3 }' "$WORK/out"); do
    [ ! -e "$d" ] && pass "remote temp dir $d removed" || fail "remote temp dir $d left"
done
check_no_tmpdir "remote job"

# --bind spread (the default) reaches ranks started over ssh too: the two ranks of each host run
# on their own shares of its CPUs (taskset there), with --verbose saying so; --bind none leaves
# them where the host's shell runs. (Needs 2 CPUs here, and taskset.)
all_cpus=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status 2>/dev/null)
if command -v taskset >/dev/null && [ "$(nproc 2>/dev/null || echo 1)" -ge 2 ] && [ -n "$all_cpus" ]; then
    cpus='echo "$TETHER_RANK cpus $(awk "/^Cpus_allowed_list:/ { print \$2 }" /proc/self/status)"'
    launch --hostfile "$WORK/hosts.json" -n 2 --ssh-command "$SSH_CMD" --verbose -- sh -c "$cpus"
    check_eq "bound over ssh: exit 0" 0 "$RC"
    for r in 0 2 4; do
        a=$(awk -v r=$r '$1 == r && $2 == "cpus" { print $3 }' "$WORK/out")
        b=$(awk -v r=$((r + 1)) '$1 == r && $2 == "cpus" { print $3 }' "$WORK/out")
        [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ] && [ "$a" != "$all_cpus" ] &&
            [ "$b" != "$all_cpus" ] && pass "ranks $r and $((r + 1)) on their own CPUs ($a, $b)" ||
            fail "ranks $r and $((r + 1)) not bound apart: '$a' '$b' (all: $all_cpus)"
    done
    check_grep "--verbose says where a remote rank runs" \
        '^tether launch: rank 5 runs on CPUs [0-9,]+ of its host \(--bind spread\)$' "$WORK/err"
    launch --hostfile "$WORK/hosts.json" -n 2 --ssh-command "$SSH_CMD" --bind none -- sh -c "$cpus"
    check_eq "--bind none over ssh: every rank on all CPUs" "$all_cpus" \
        "$(awk '$2 == "cpus" { print $3 }' "$WORK/out" | sort -u)"
else
    echo "skip: remote binding checks need 2 CPUs and taskset"
fi

# Spaces, quotes and shell characters in the working directory, program and arguments survive.
dir="$WORK/dir with 'quotes' and spaces"
mkdir -p "$dir"
printf '#!/bin/sh\nfor a in "$@"; do echo "[$a]"; done\npwd\n' >"$dir/my prog.sh"
chmod +x "$dir/my prog.sh"
launch --hosts node2 --ssh-command "$SSH_CMD" --cwd "$dir" -- "./my prog.sh" "two words" "it's" '$HOME' '*' '' 'a"b'
check_eq "quoting: exit 0" 0 "$RC"
check_eq "quoting: arguments and cwd" "[two words]
[it's]
[\$HOME]
[*]
[]
[a\"b]
$dir" "$(cat "$WORK/out")"

# Default working directory: the launcher's, when the host has it.
(cd "$dir" && "$TETHER" launch --hosts node1 --ssh-command "$SSH_CMD" -- pwd </dev/null >"$WORK/out" 2>"$WORK/err")
check_eq "default cwd is the launcher's" "$dir" "$(cat "$WORK/out")"

# --cwd missing on the host: an error naming the host and the directory.
launch --hosts node1,node3 --ssh-command "$SSH_CMD" --cwd /no/such/dir -- true
check_eq "--cwd missing: exit 127" 127 "$RC"
check_grep "--cwd missing: host named" '^tether launch: rank [01] on node[13]: --cwd /no/such/dir: no such directory$' "$WORK/err"

# stdin goes to every remote rank.
head -c 300000 /dev/urandom | base64 >"$WORK/input"
want=$(md5sum <"$WORK/input" | cut -d' ' -f1)
"$TETHER" launch --hosts node1,node2,node3 --ssh-command "$SSH_CMD" -- sh -c 'md5sum | cut -d" " -f1' \
    <"$WORK/input" >"$WORK/out"
check_eq "stdin to every remote rank" "$want $want $want" "$(tr '\n' ' ' <"$WORK/out" | sed 's/ $//')"

# Hosts that are this machine run without ssh; others through it.
launch --hosts localhost,127.0.0.2,node3 --verbose --ssh-command "$SSH_CMD" -- sh -c 'echo "$TETHER_RANK ${SSH_CONNECTION:-local}"'
check_eq "local detection: exit 0" 0 "$RC"
check_eq "local detection" "0 local
1 local
2 ssh" "$(sort "$WORK/out" | sed 's/ 127\.0\.0\.1 .*/ ssh/')"

# An unreachable host: ssh's error, a non-zero exit naming the host.
launch --hosts node1,node9 --ssh-command "$SSH_CMD" -- sleep 30
check_eq "unreachable host: ssh's status" 255 "$RC"
check_grep "unreachable host: ssh's error" 'node9|127\.0\.0\.9' "$WORK/err"
check_grep "unreachable host: named" "^tether launch: rank 1 on node9 exited with status 255 \(ssh's status" "$WORK/err"
finish
