# tests/launcher/test_stdin.sh - the launcher's stdin reaches every rank whole; EOF closes theirs.
. "$(dirname "$0")/lib.sh" "$1"

printf 'alpha\nbeta\n' | "$TETHER" launch -n 3 --prefix -- cat >"$WORK/out"
check_eq "small input to every rank" "[0] alpha
[0] beta
[1] alpha
[1] beta
[2] alpha
[2] beta" "$(sort "$WORK/out")"

# 3 MB, far more than a pipe holds, so ranks take it at different paces.
head -c 2250000 /dev/urandom | base64 >"$WORK/input"
want=$(md5sum <"$WORK/input" | cut -d' ' -f1)
"$TETHER" launch -n 3 -- sh -c 'md5sum | cut -d" " -f1' <"$WORK/input" >"$WORK/out"
check_eq "3 MB to every rank" "$want $want $want" "$(tr '\n' ' ' <"$WORK/out" | sed 's/ $//')"

# A rank that never reads stdin and exits does not hold the others back.
"$TETHER" launch -n 3 -- sh -c '[ "$TETHER_RANK" = 0 ] && exit 0; md5sum | cut -d" " -f1' \
    <"$WORK/input" >"$WORK/out"
check_eq "a rank not reading stdin" "$want $want" "$(tr '\n' ' ' <"$WORK/out" | sed 's/ $//')"

# stdin at EOF: ranks reading it finish.
"$TETHER" launch -n 2 -- sh -c 'cat; echo done' </dev/null >"$WORK/out"
check_eq "EOF reaches the ranks" "done
done" "$(cat "$WORK/out")"
finish
