# tests/support/sshd.sh - a real sshd on loopback for the tests that go through ssh (remote launch,
# `tether check`, `tether config`), sourced with $WORK set to the test's temp dir, which it removes
# on exit. Generates host and user keys in $WORK/ssh, starts /usr/sbin/sshd on a free port
# listening on 127.0.0.1-3, and writes an ssh config mapping node1..node3 to those addresses
# (node9 to one where nothing listens). Sets SSH_CMD (for --ssh-command) and stops sshd on exit.
# Exits 77 (skipped) where that cannot work.
SSHD=/usr/sbin/sshd
if [ "$(id -u)" != 0 ] || [ ! -x "$SSHD" ] || ! command -v ssh >/dev/null; then
    echo "SKIP: needs root, $SSHD and ssh" >&2
    exit 77
fi
S=$WORK/ssh
mkdir -p "$S" && chmod 700 "$S"
ssh-keygen -q -t ed25519 -N '' -f "$S/host_key" || exit 1
ssh-keygen -q -t ed25519 -N '' -f "$S/user_key" || exit 1
cp "$S/user_key.pub" "$S/authorized_keys"
# sourced, by sh too (no BASH_SOURCE): its callers sit one folder below tests/, beside support/
SSH_PORT=$(python3 "$(dirname "$0")/../support/free_ports.py")
cat >"$S/sshd_config" <<CFG
Port $SSH_PORT
ListenAddress 127.0.0.1
ListenAddress 127.0.0.2
ListenAddress 127.0.0.3
HostKey $S/host_key
AuthorizedKeysFile $S/authorized_keys
PidFile $S/sshd.pid
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
LogLevel ERROR
# bash, the login shell, sources ~/.bashrc for every command run over ssh when SHLVL is below 2 on
# entry (Debian's SSH_SOURCE_BASHRC); a developer's .bashrc (pyenv init here: 0.6 s idle, 3 s
# loaded) would then cost every session of the tests. The sessions' commands need nothing of it.
SetEnv SHLVL=1
CFG
: >"$S/config"
for i in 1 2 3; do
    cat >>"$S/config" <<CFG
Host node$i
    HostName 127.0.0.$i
    Port $SSH_PORT
    User root
    IdentityFile $S/user_key
    IdentitiesOnly yes
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
    BatchMode yes
    ConnectTimeout 5
    ControlPath $S/cm-%h
CFG
done
# node9: an address where nothing listens, for the unreachable-host test.
printf 'Host node9\n    HostName 127.0.0.9\n    Port %s\n    ConnectTimeout 5\n' "$SSH_PORT" >>"$S/config"
mkdir -p /run/sshd # privilege separation dir, as the sshd service would make it
"$SSHD" -D -e -f "$S/sshd_config" 2>"$S/sshd.log" &
SSHD_PID=$!
stop_sshd() {
    local i
    for i in 1 2 3; do ssh -F "$S/config" -O exit node$i 2>/dev/null; done
    kill $SSHD_PID 2>/dev/null
    wait $SSHD_PID 2>/dev/null
    rm -rf "$WORK"
}
trap stop_sshd EXIT
SSH_CMD="ssh -F '$S/config'"
for i in $(seq 50); do
    ssh -F "$S/config" node3 true 2>/dev/null && break
    sleep 0.1
done
ssh -F "$S/config" node3 true || { echo "FAIL: sshd did not come up:" >&2; cat "$S/sshd.log" >&2; exit 1; }
# One master connection per node: every session of the tests (a new sshd session process each,
# as without it) then skips the key exchange, which takes seconds on a loaded machine.
for i in 1 2 3; do
    ssh -F "$S/config" -o ControlMaster=yes -o ControlPersist=yes node$i true </dev/null >/dev/null 2>&1 ||
        { echo "FAIL: no master connection to node$i" >&2; exit 1; }
done
