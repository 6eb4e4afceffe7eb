# tests/launcher/test_env.sh - what each rank gets: TETHER_*, torchrun's variables, --env, the hostfile.
. "$(dirname "$0")/lib.sh" "$1"

show='for v in TETHER_RANK TETHER_SIZE TETHER_JOB_TOKEN TETHER_BACKEND TETHER_TIMEOUT TETHER_VERBOSE \
  MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE FOO; do
  eval "echo $TETHER_RANK $v=\${$v-unset}"; done; echo "$TETHER_RANK HOSTFILE $(tr -d " \n" <"$TETHER_HOSTFILE")"
  echo "$TETHER_RANK DIR $(dirname "$TETHER_HOSTFILE")"'

launch -n 3 -- sh -c "$show"
check_eq "plain job exits 0" 0 "$RC"
val() { awk -v r="$1" -v k="$2=" '$1 == r && index($2, k) == 1 { print substr($2, length(k) + 1) }' "$WORK/out"; }
for r in 0 1 2; do
    check_eq "rank $r TETHER_RANK" "$r" "$(val $r TETHER_RANK)"
    check_eq "rank $r RANK" "$r" "$(val $r RANK)"
    check_eq "rank $r LOCAL_RANK" "$r" "$(val $r LOCAL_RANK)"
    check_eq "rank $r TETHER_SIZE" 3 "$(val $r TETHER_SIZE)"
    check_eq "rank $r WORLD_SIZE" 3 "$(val $r WORLD_SIZE)"
    check_eq "rank $r LOCAL_WORLD_SIZE" 3 "$(val $r LOCAL_WORLD_SIZE)"
    check_eq "rank $r MASTER_ADDR" 127.0.0.1 "$(val $r MASTER_ADDR)"
    check_eq "rank $r no TETHER_BACKEND without --backend" unset "$(val $r TETHER_BACKEND)"
    check_eq "rank $r no TETHER_TIMEOUT without --timeout" unset "$(val $r TETHER_TIMEOUT)"
    check_eq "rank $r same token as rank 0" "$(val 0 TETHER_JOB_TOKEN)" "$(val $r TETHER_JOB_TOKEN)"
    check_eq "rank $r same MASTER_PORT as rank 0" "$(val 0 MASTER_PORT)" "$(val $r MASTER_PORT)"
done
echo "$(val 0 TETHER_JOB_TOKEN)" | grep -Eq '^[0-9a-f]{32}$' && pass "token is 32 hex digits" ||
    fail "token '$(val 0 TETHER_JOB_TOKEN)' is not 32 hex digits"
hostfile=$(awk '$1 == 0 && $2 == "HOSTFILE" { print $3 }' "$WORK/out")
echo "$hostfile" | grep -Eq '^\[\["127\.0\.0\.1:[0-9]+"\],\["127\.0\.0\.1:[0-9]+"\],\["127\.0\.0\.1:[0-9]+"\]\]$' &&
    pass "hostfile: one loopback address per rank" || fail "hostfile: $hostfile"
ports=$(echo "$hostfile $(val 0 MASTER_PORT)" | grep -Eo '[0-9]{4,5}' | sort -u | wc -l)
check_eq "listen ports and MASTER_PORT all different" 4 "$ports"
dir=$(awk '$1 == 0 && $2 == "DIR" { print $3 }' "$WORK/out")
case "$dir" in "$WORK"/tether-launch-*) pass "hostfile in a private temp dir under TMPDIR";; *) fail "hostfile dir $dir";; esac
[ ! -e "$dir" ] && pass "temp dir removed after the job" || fail "temp dir $dir still there"

# Ports counted as mlx.launch does, K addresses per rank, and every option that sets a variable.
launch -n 2 --backend ring --starting-port 40100 --connections-per-ip 3 --timeout 9 --verbose \
    --env FOO='a b=c' --env TETHER_TIMEOUT=11 -- sh -c "$show"
check_eq "ring job exits 0" 0 "$RC"
check_eq "ring hostfile" \
    '[["127.0.0.1:40100","127.0.0.1:40101","127.0.0.1:40102"],["127.0.0.1:40103","127.0.0.1:40104","127.0.0.1:40105"]]' \
    "$(awk '$1 == 1 && $2 == "HOSTFILE" { print $3 }' "$WORK/out")"
check_eq "MASTER_PORT follows the listen ports" 40106 "$(val 1 MASTER_PORT)"
check_eq "TETHER_BACKEND" ring "$(val 1 TETHER_BACKEND)"
check_eq "--env wins over --timeout" 11 "$(val 1 TETHER_TIMEOUT)"
check_eq "TETHER_VERBOSE" 1 "$(val 1 TETHER_VERBOSE)"
check_eq "--env value with space and =" "FOO=a b=c" "$(grep -o 'FOO=.*' "$WORK/out" | sort -u)"
check_grep "--verbose says what it planned" '^tether launch: 2 ranks on 1 host, files in .*, first port 40100, MASTER_PORT 40106$' "$WORK/err"

launch -n 2 --timeout 9 -- sh -c "$show"
check_eq "--timeout sets TETHER_TIMEOUT" 9 "$(val 0 TETHER_TIMEOUT)"

# A launcher hostfile whose hosts are all this machine (no ssh): its backend and envs, one rank
# per host on each host's address, and the RDMA device matrix from its "rdma" lists.
cat >"$WORK/hosts.json" <<'JSON'
{"backend": "rdma", "envs": ["FOO=from the hostfile"],
 "hosts": [{"ssh": "127.0.0.1", "ips": ["127.0.0.1"], "rdma": [null, "rdma_a", ["rdma_b", "rdma_c"]]},
           {"ssh": "127.0.0.2", "ips": ["127.0.0.2"], "rdma": ["rdma_d", null, "rdma_e"]},
           {"ssh": "localhost", "ips": ["127.0.0.3"], "rdma": [["x", "z"], "y", null]}]}
JSON
launch --hostfile "$WORK/hosts.json" --starting-port 40200 -- sh -c "$show"'; echo "$TETHER_RANK DEV $(tr -d " \n" <"$TETHER_IBV_DEVICES")"'
check_eq "hostfile job exits 0" 0 "$RC"
check_eq "backend from the hostfile" rdma "$(val 2 TETHER_BACKEND)"
check_eq "envs from the hostfile" "FOO=from the hostfile" "$(grep -o 'FOO=.*' "$WORK/out" | sort -u)"
check_eq "one rank per host" '[["127.0.0.1:40200"],["127.0.0.2:40201"],["127.0.0.3:40202"]]' \
    "$(awk '$1 == 2 && $2 == "HOSTFILE" { print $3 }' "$WORK/out")"
check_eq "device matrix" '[[null,"rdma_a",["rdma_b","rdma_c"]],["rdma_d",null,"rdma_e"],[["x","z"],"y",null]]' \
    "$(awk '$1 == 1 && $2 == "DEV" { print $3 }' "$WORK/out")"
launch --hostfile "$WORK/hosts.json" -n 2 -- true
check_eq "rdma with 2 ranks per host refused" 1 "$RC"
check_grep "rdma refusal explained" 'RDMA devices are per host, so one rank per host' "$WORK/err"
check_no_tmpdir "after all jobs"
finish
