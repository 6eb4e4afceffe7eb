# tests/launcher/test_prompt.sh - an unfinished line (a prompt, as pdb or input() print) reaches the
# terminal while its rank waits for input, not only when the input arrives; another rank's line
# never lands inside it.
. "$(dirname "$0")/lib.sh" "$1"

mkfifo "$WORK/in"
# Rank 0 prompts and waits; rank 1 says a whole line only after rank 0's prompt went out.
prog='if [ "$TETHER_RANK" = 0 ]; then printf "prompt> "; read -r answer; echo "got $answer";
else sleep 1; echo "rank 1 line"; cat >/dev/null; fi'
"$TETHER" launch -n 2 --prefix -- sh -c "$prog" <"$WORK/in" >"$WORK/out" 2>"$WORK/err" &
pid=$!
exec 3>"$WORK/in" # the launcher's stdin stays open: rank 0 waits on it
seen=no
for _ in $(seq 100); do # up to 10 s, well past the 100 ms quiet period, even on a loaded machine
    grep -qF '[0] prompt> ' "$WORK/out" && { seen=yes; break; }
    sleep 0.1
done
check_eq "the prompt is out before any input" yes "$seen"
wait_for_lines "$WORK/out" 2 10 || true # rank 1's line, after the prompt
echo "yes" >&3
exec 3>&-
wait $pid
check_eq "job exits 0" 0 "$?"
# The prompt's line was ended before rank 1's line went out; the answer starts its own line.
check_eq "no two ranks share a line" "[0] prompt> 
[1] rank 1 line
[0] got yes" "$(cat "$WORK/out")"

# The owner's own continuation stays on the prompt's line when no other rank spoke in between.
printf 'abc\n' | "$TETHER" launch -n 1 --prefix -- sh -c 'printf "name? "; sleep 0.5; printf "still "; read -r x; echo "$x"' >"$WORK/out"
check_eq "one rank's pieces join up" "[0] name? still abc" "$(cat "$WORK/out")"
finish
