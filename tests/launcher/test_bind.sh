# tests/launcher/test_bind.sh - --bind: the ranks started on this machine each run on their own
# share of the launcher's CPUs (spread, the default), or where the system puts them (none).
. "$(dirname "$0")/lib.sh" "$1"

[ "$(uname -s)" = Linux ] || { echo "skip: binding is Linux only"; exit 77; }
command -v taskset >/dev/null || { echo "skip: no taskset (util-linux)"; exit 77; }
taskset -c 0,1 true 2>/dev/null || { echo "skip: CPUs 0 and 1 are not both usable here"; exit 77; }

show='echo "$TETHER_RANK $(awk "/^Cpus_allowed_list:/ { print \$2 }" /proc/self/status)"'
# cpus_of R: the CPU list rank R printed.
cpus_of() { awk -v r="$1" '$1 == r { print $2 }' "$WORK/out"; }

# Every check runs the launcher on CPUs 0 and 1, so the shares do not depend on this machine.
launch2() { RUN_UNDER="taskset -c 0,1" launch "$@"; }

launch2 -n 4 --verbose -- sh -c "$show"
check_eq "4 ranks on 2 CPUs exit 0" 0 "$RC"
for r in 0 1 2 3; do check_eq "4 ranks on 2 CPUs: rank $r" $((r % 2)) "$(cpus_of $r)"; done
check_grep "--verbose says where rank 3 runs" '^tether launch: rank 3 runs on CPU 1 \(--bind spread\)$' "$WORK/err"

launch2 -n 2 -- sh -c "$show"
check_eq "2 ranks on 2 CPUs: rank 0" 0 "$(cpus_of 0)"
check_eq "2 ranks on 2 CPUs: rank 1" 1 "$(cpus_of 1)"

launch2 -n 3 -- sh -c "$show"
check_eq "3 ranks on 2 CPUs: rank 2 shares CPU 0" 0 "$(cpus_of 2)"

launch2 -n 1 -- sh -c "$show"
check_eq "a rank alone is not bound" 0-1 "$(cpus_of 0)"

launch2 -n 2 --bind none -- sh -c "$show"
check_eq "--bind none: rank 0 unbound" 0-1 "$(cpus_of 0)"
check_eq "--bind none: rank 1 unbound" 0-1 "$(cpus_of 1)"
check_eq "--bind none says nothing" "" "$(cat "$WORK/err")"

# The launcher's own CPU set is what is shared out.
RUN_UNDER="taskset -c 1" launch -n 3 -- sh -c "$show"
check_eq "launcher on CPU 1: exits 0" 0 "$RC"
for r in 0 1 2; do check_eq "launcher on CPU 1: rank $r" 1 "$(cpus_of $r)"; done

# A launcher hostfile whose two hosts are both this machine: one rank each, still spread.
cat >"$WORK/hosts.json" <<'JSON'
[{"ssh": "127.0.0.1", "ips": ["127.0.0.1"]}, {"ssh": "localhost", "ips": ["127.0.0.2"]}]
JSON
launch2 --hostfile "$WORK/hosts.json" -- sh -c "$show"
check_eq "two local hosts: exits 0" 0 "$RC"
check_eq "two local hosts: rank 0" 0 "$(cpus_of 0)"
check_eq "two local hosts: rank 1" 1 "$(cpus_of 1)"

launch2 -n 2 --bind all -- true
check_eq "--bind all: usage error" 2 "$RC"
check_grep "--bind all: says what it takes" "^tether launch: --bind: expected spread or none, got 'all'" "$WORK/err"

# A real job: a collective on 4 ranks bound two to a CPU runs to the end.
launch2 -n 4 -- "$2"
check_eq "all_sum on 4 bound ranks" 0 "$RC"
check_no_tmpdir "after all jobs"
finish
