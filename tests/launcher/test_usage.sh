# tests/launcher/test_usage.sh - help, version, and a clear message with exit 2 for every bad argument.
. "$(dirname "$0")/lib.sh" "$1"

"$TETHER" --help >"$WORK/out"; check_eq "tether --help exits 0" 0 $?
check_grep "tether --help lists launch" '^  launch ' "$WORK/out"
"$TETHER" --version >"$WORK/out"; check_eq "tether --version exits 0" 0 $?
check_grep "version printed" '^tether [0-9]+\.[0-9]+\.[0-9]+$' "$WORK/out"
"$TETHER" launch --help >"$WORK/out"; check_eq "tether launch --help exits 0" 0 $?
check_grep "launch help shows usage" '^usage: tether launch -n N' "$WORK/out"
"$TETHER" frobnicate 2>"$WORK/err"; check_eq "unknown command exits 2" 2 $?
check_grep "unknown command named" "unknown command 'frobnicate'" "$WORK/err"

# bad_args EXPECTED_MESSAGE ARGS...: exit 2, message on stderr, no rank started.
bad_args() {
    local msg=$1
    shift
    launch "$@"
    check_eq "'$*' exits 2" 2 "$RC"
    check_grep "'$*' says why" "$msg" "$WORK/err"
}
bad_args "-n N is required" -- true
bad_args "no PROGRAM given" -n 2
bad_args "-n: expected a whole number from 1 to 4096, got '0'" -n 0 true
bad_args "-n: expected a whole number from 1 to 4096, got 'x'" -n x true
bad_args "unknown option '--bogus'" -n 2 --bogus true
bad_args "option '--backend' needs a value" -n 2 --backend
bad_args "--backend: expected ring, mesh, rdma \\(or jaccl, jaccl-ring\\) or any, got 'tcp'" -n 2 --backend tcp true
bad_args "--env: expected NAME=VALUE" -n 2 --env NOEQUALS true
bad_args "--env: expected NAME=VALUE" -n 2 --env =x true
bad_args "--starting-port: expected a whole number from 1 to 65535, got '70000'" -n 2 --starting-port 70000 true
bad_args "option '--prefix=1' takes no value" -n 2 --prefix=1 true
bad_args "--timeout: expected a whole number" -n 2 --timeout -1 true
bad_args "--hosts: expected a comma-separated list of hosts, got 'a,,b'" --hosts a,,b true
bad_args "--hosts and --hostfile: give one of them" --hosts a --hostfile b true

launch -n 2 --starting-port 65535 -- true
check_eq "ports past 65535 refused" 1 "$RC"
check_grep "port range explained" 'needs 3 ports, past 65535' "$WORK/err"

# Options in the other accepted spellings.
launch -n2 --backend=mesh true
check_eq "-n2 and --backend=mesh, no --" 0 "$RC"
check_no_tmpdir "after usage errors"
finish
