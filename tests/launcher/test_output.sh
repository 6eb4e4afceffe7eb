# tests/launcher/test_output.sh - ranks' output passes through in whole lines, never two ranks in one.
. "$(dirname "$0")/lib.sh" "$1"

# 4 ranks, each 400 lines of 5000 bytes (more than PIPE_BUF, so reads end mid-line) on stdout
# and stderr at once, all into one file: every line must be one rank's, whole.
gen='awk -v r="$TETHER_RANK" -v fd="$1" "BEGIN { s = \"\"; for (i = 0; i < 5000; i++) s = s r;
  for (i = 0; i < 400; i++) { if (fd == 2) print \"err\", i, s > \"/dev/stderr\"; else print \"out\", i, s } }"'
"$TETHER" launch -n 4 --prefix -- sh -c "sh -c '$gen' x 1 & sh -c '$gen' x 2; wait" </dev/null >"$WORK/all" 2>&1
check_eq "flood job exits 0" 0 $?
check_eq "line count" 3200 "$(wc -l <"$WORK/all")"
bad=$(awk '{ r = substr($1, 2, 1); if ($1 != "[" r "]" || ($2 != "out" && $2 != "err") || length($4) != 5000 ||
      $4 !~ ("^" r "+$") || NF != 4) n++ } END { print n + 0 }' "$WORK/all")
check_eq "lines mixing ranks or cut" 0 "$bad"
for r in 0 1 2 3; do
    check_eq "rank $r stdout lines in order" "$(seq 0 399 | tr '\n' ' ')" \
        "$(awk -v p="[$r]" '$1 == p && $2 == "out" { printf "%s ", $3 }' "$WORK/all")"
done

# Without --prefix the bytes pass unchanged; stderr stays stderr.
launch -n 2 -- sh -c 'echo "to out"; echo "to err" >&2'
check_eq "stdout unprefixed" "to out
to out" "$(cat "$WORK/out")"
check_eq "stderr unprefixed" "to err
to err" "$(cat "$WORK/err")"

# A partial last line is flushed at exit, ended so the next rank's output starts a new line.
launch -n 2 --prefix -- sh -c 'printf "no newline $TETHER_RANK"'
check_eq "partial last lines" "[0] no newline 0
[1] no newline 1" "$(sort "$WORK/out")"

# A line longer than 1 MiB is cut into pieces, each a line with the prefix; no byte is lost.
launch -n 1 --prefix -- sh -c 'head -c 2621440 /dev/zero | tr "\0" x; echo; echo end'
check_eq "long line: total x bytes" 2621440 "$(sed 's/^\[0\] //' "$WORK/out" | tr -cd x | wc -c)"
check_eq "long line: every piece prefixed" 0 "$(grep -vc '^\[0\] ' "$WORK/out")"
check_eq "long line: then the next line" "[0] end" "$(tail -1 "$WORK/out")"
finish
