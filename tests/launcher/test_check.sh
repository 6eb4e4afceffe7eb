# tests/launcher/test_check.sh - `tether check` on this machine, and over loopback "hosts" run
# without ssh: the report's sections, the matrices, and the exit status matching what it found.
. "$(dirname "$0")/lib.sh" "$1"

"$TETHER" check >"$WORK/out" 2>"$WORK/err"
rc=$?
for section in '^tether [0-9.]+ on .*, jansson ' '^backends:$' '^  mesh ' '^  singleton  usable$' \
    '^interfaces \(IPv4\):$' '^  lo +127\.0\.0\.1/8  loopback$' '^RDMA devices:$' '^environment:$' \
    '^  TETHER_TIMEOUT +none for calls; 120 to form the group \(default\)$' '^problems:$'; do
    check_grep "local report: $section" "$section" "$WORK/out"
done
if grep -q '^  none$' "$WORK/out"; then check_eq "no problems: exit 0" 0 "$rc"; else check_eq "problems: exit 1" 1 "$rc"; fi

# The interface filter is applied, and values in force are shown.
TETHER_IFACE_PRIORITY=127. TETHER_TIMEOUT=7 "$TETHER" check >"$WORK/out" 2>&1
check_grep "filter passes loopback" '^  lo +127\.0\.0\.1/8  loopback  passes TETHER_IFACE_PRIORITY$' "$WORK/out"
check_grep "value in force" '^  TETHER_TIMEOUT +7$' "$WORK/out"
TETHER_TIMEOUT=abc "$TETHER" check >"$WORK/out" 2>&1
check_eq "malformed environment: exit 1" 1 $?
check_grep "malformed environment named" 'TETHER_TIMEOUT' "$WORK/out"

"$TETHER" check --bogus >"$WORK/out" 2>&1
check_eq "unknown option: exit 2" 2 $?
"$TETHER" check --bytes 12X >"$WORK/out" 2>&1
check_eq "bad --bytes: exit 2" 2 $?

# Three "hosts" that are this machine (no ssh): every rank's report, then both matrices.
"$TETHER" check --hosts 127.0.0.1,127.0.0.2,127.0.0.3 --bytes 4M >"$WORK/out" 2>"$WORK/err"
rc=$?
check_eq "a report per rank" "== rank 0 ==,== rank 1 ==,== rank 2 ==" "$(grep '^== rank' "$WORK/out" | paste -sd,)"
check_grep "links line" '^links over mesh, 3 ranks, 4194304 bytes per bandwidth measurement:$' "$WORK/out"
for m in '8-byte round trip' 'bandwidth, MB/s'; do
    rows=$(awk -v t="$m" 'index($0, t) == 1 { on = 1; next } on && /^  r[0-9]/ { n++; if (NF != 4) bad = 1 } on && /^$/ { on = 0 }
        END { print n + 0, bad + 0 }' "$WORK/out")
    check_eq "$m matrix: 3 rows of 3" "3 0" "$rows"
done
# Loopback speed varies on a busy machine, so a warning may come; the status must match it.
if grep -q '^warning: ' "$WORK/out"; then
    check_eq "warning -> exit 1" 1 "$rc"
    check_grep "verdict" '^tether check: problems found' "$WORK/out"
else
    check_eq "no warning -> exit 0" 0 "$rc"
    check_grep "verdict" '^tether check: all good$' "$WORK/out"
fi
check_no_tmpdir "check"
finish
