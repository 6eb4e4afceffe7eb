# tests/launcher/test_mlx_launch.sh - mlx.launch's spellings under tether launch: a .py PROGRAM run
# with Python, --python, --print-python, -p, --repeat-hosts, --no-verify-script, --backend jaccl,
# and MLX's variables beside tether's, so an MLX program runs unchanged.
. "$(dirname "$0")/lib.sh" "$1"
cd "$WORK" || exit 1

# An MLX-style script: not executable, no #! line; it reads MLX's variables.
cat >"$WORK/script.py" <<'PY'
import os, sys
print(os.environ["MLX_RANK"], os.environ["MLX_WORLD_SIZE"], os.path.exists(os.environ["MLX_HOSTFILE"]),
      os.environ["MLX_HOSTFILE"] == os.environ["TETHER_HOSTFILE"], os.path.basename(sys.executable),
      " ".join(sys.argv[1:]), flush=True)
PY
launch -n 2 script.py a "b c"
check_eq "launch -n 2 script.py exits 0" 0 "$RC"
check_eq "each rank ran the script with Python, with MLX's variables" \
    "0 2 True True python3 a b c|1 2 True True python3 a b c" "$(sort "$WORK/out" | paste -sd'|')"

# --python picks the interpreter (here a wrapper that says it ran), -p is --starting-port,
# --repeat-hosts is -n, --backend jaccl is rdma (and sets the JACCL coordinator).
printf '#!/bin/sh\necho wrapped >&2\nexec python3 "$@"\n' >"$WORK/py"
chmod +x "$WORK/py"
launch --repeat-hosts 2 -p 41300 --python "$WORK/py" --backend jaccl -- script.py
check_eq "--python, -p, --repeat-hosts, --backend jaccl: exits 0" 0 "$RC"
check_eq "--python ran every rank" 2 "$(grep -c wrapped "$WORK/err")"
launch -n 2 --backend jaccl -- sh -c 'echo "$TETHER_BACKEND $MLX_JACCL_COORDINATOR"'
check_grep "--backend jaccl sets TETHER_BACKEND=rdma and MLX_JACCL_COORDINATOR" \
    '^rdma 127\.0\.0\.1:[0-9]+$' "$WORK/out"
launch -n 1 -p 41310 -- sh -c 'tr -d " \n" <"$MLX_HOSTFILE"'
check_eq "-p sets the first port" '[["127.0.0.1:41310"]]' "$(cat "$WORK/out")"

# --timeout 0 (wait as long as peers answer heartbeats) is passed on, not refused.
launch -n 1 --timeout 0 -- sh -c 'echo "$TETHER_TIMEOUT"'
check_eq "--timeout 0 reaches the ranks" 0 "$(cat "$WORK/out")"

# A missing script is refused before any rank starts, unless --no-verify-script.
launch -n 2 missing.py
check_eq "missing .py: usage error" 2 "$RC"
check_grep "missing .py: named, with the way round it" 'missing\.py: No such file.*--no-verify-script' "$WORK/err"
launch -n 1 --no-verify-script missing.py
check_eq "--no-verify-script starts it: Python's own status" 2 "$RC"
check_grep "--no-verify-script: Python says the file is missing" "can't open file" "$WORK/err"

# --print-python says which Python .py programs run with, and starts nothing.
"$TETHER" launch --print-python >"$WORK/out" 2>&1
check_eq "--print-python exits 0" 0 "$?"
check_eq "--print-python names python3 on PATH" "$(command -v python3)" "$(cat "$WORK/out")"
"$TETHER" launch --python "$WORK/py" --print-python >"$WORK/out" 2>&1
check_eq "--print-python with --python" "$WORK/py" "$(cat "$WORK/out")"
finish
