# tests/config/fake_bin/_fake_lib.sh - sourced by the fake commands: where the host's files are,
# and the log of every command that would change a host.
: "${FAKE_HOST:?fake commands run only under fake_ssh.sh}"
STATE=$FAKE_HOST/state
fake_log() {
    mkdir -p "$STATE"
    [ -n "${TETHER_FAKE_LOG:-}" ] && echo "$FAKE_NAME: $*" >>"$TETHER_FAKE_LOG"
    return 0
}
