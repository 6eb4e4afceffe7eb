#!/bin/sh
# tests/config/fake_ssh.sh - stands in for ssh in `tether config --ssh-command`: runs the command
# for HOST locally, as a fake host of the set in $TETHER_FAKE_SET: its fixture commands first in
# PATH (fake_bin/, reading the host's files) and its sysfs tree as TETHER_SYSFS_ROOT.
# Usage: fake_ssh.sh HOST COMMAND
host=$1
dir=$TETHER_FAKE_SET/$host
if [ ! -d "$dir" ]; then
    echo "ssh: Could not resolve hostname $host: Name or service not known" >&2
    exit 255
fi
if [ -f "$dir/unreachable" ]; then
    cat "$dir/unreachable" >&2
    exit 255
fi
FAKE_HOST=$dir FAKE_NAME=$host PATH="$(dirname "$0")/fake_bin:$PATH" TETHER_SYSFS_ROOT=$dir/sys \
    exec sh -c "$2"
