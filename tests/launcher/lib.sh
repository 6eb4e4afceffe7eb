# tests/launcher/lib.sh - helpers the launcher tests source: run the launcher, check, clean up.
# Usage in a test: . "$(dirname "$0")/lib.sh" "$1"   (the argument is the tether binary)
set -u
TETHER=${1:?usage: $0 path/to/tether}
[ -x "$TETHER" ] || { echo "FAIL: $TETHER is not an executable" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tether-launcher-test.XXXXXX")
export TMPDIR=$WORK # the launcher's temp dirs land here, so the tests can see them go
trap 'rm -rf "$WORK"' EXIT
FAILS=0

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); return 1; }
pass() { echo "ok: $*"; }

# check DESCRIPTION EXPECTED ACTUAL
check_eq() {
    if [ "$2" = "$3" ]; then pass "$1"; else fail "$1: expected '$2', got '$3'"; fi
}

# check_grep DESCRIPTION PATTERN FILE: FILE has a line matching the extended regex.
check_grep() {
    if grep -Eq -- "$2" "$3"; then pass "$1"; else fail "$1: no line matching '$2' in:"; sed 's/^/  | /' "$3" >&2; fi
}

# launch ARGS...: run tether launch with stdin from /dev/null; sets RC, output in $WORK/out, $WORK/err.
# RUN_UNDER, when set, is a command the launcher runs under (such as "taskset -c 0,1").
launch() {
    ${RUN_UNDER-} "$TETHER" launch "$@" </dev/null >"$WORK/out" 2>"$WORK/err"
    RC=$?
}

# No launcher temp dir is left under $WORK.
check_no_tmpdir() {
    local left
    left=$(find "$WORK" -maxdepth 1 -name 'tether-launch-*' | head -1)
    if [ -z "$left" ]; then pass "$1: temp dir removed"; else fail "$1: temp dir left: $left"; fi
}

# live_in_groups PGID...: the processes, zombies aside, in any of these process groups.
live_in_groups() {
    ps -eo pid=,pgid=,stat=,args= | awk -v g=" $* " 'index(g, " " $2 " ") && $3 !~ /^Z/'
}

# check_groups_gone DESCRIPTION PGID...: no live process is left in any of these process groups.
# Dead ones may still await their reaper (init here can take a second), so zombies do not count.
check_groups_gone() {
    local what=$1 left
    shift
    [ $# -gt 0 ] || { fail "$what: no process group ids to check"; return; }
    left=$(live_in_groups "$@")
    if [ -z "$left" ]; then pass "$what: no rank process left"; else
        fail "$what: processes left:"
        echo "$left" >&2
    fi
}

# wait_groups_gone SECONDS PGID...: until no live process is left in these groups (0 when so).
wait_groups_gone() {
    local i tenths=$(($1 * 10))
    shift
    for i in $(seq "$tenths"); do
        [ -z "$(live_in_groups "$@")" ] && return 0
        sleep 0.1
    done
    return 1
}

# wait_for_lines FILE N SECONDS: until FILE has N lines (1 when it got there).
wait_for_lines() {
    local i
    for i in $(seq $(($3 * 10))); do
        [ "$(wc -l <"$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}

# free_port_base N: the first of N consecutive ports free on 127.0.0.1-3 (for --starting-port,
# so jobs over "remote" hosts do not count from 5000, which other jobs may hold).
free_port_base() {
    python3 - "$1" <<'PY'
import random, socket, sys
n = int(sys.argv[1])
for _ in range(200):
    base = random.randrange(20000, 60000 - n)
    socks = []
    try:
        for port in range(base, base + n):
            for ip in ("127.0.0.1", "127.0.0.2", "127.0.0.3"):
                s = socket.socket()
                socks.append(s)
                s.bind((ip, port))
        print(base)
        break
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
PY
}

finish() {
    if [ "$FAILS" -ne 0 ]; then echo "$FAILS check(s) failed" >&2; exit 1; fi
    echo "all checks passed"
}
