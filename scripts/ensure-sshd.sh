#!/bin/sh
# The cluster tests start their own sshd on loopback (127.0.0.2, 127.0.0.3, ...), and the
# `sm121 top` test drives a real terminal through tmux, and the stage tests copy with rsync
# (they fall back to tar without it). Install openssh-server, tmux and rsync when missing; do
# nothing when all are already there.
set -eu
PACKAGES=""
if ! { [ -x /usr/sbin/sshd ] || command -v sshd >/dev/null 2>&1; }; then
    PACKAGES="openssh-server"
fi
if ! command -v tmux >/dev/null 2>&1; then
    PACKAGES="$PACKAGES tmux"
fi
if ! command -v rsync >/dev/null 2>&1; then
    PACKAGES="$PACKAGES rsync"
fi
if [ -z "$PACKAGES" ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "missing: $PACKAGES, and apt-get is not available: install them by hand;" \
         "the tests that need them skip without them" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
        echo "missing: $PACKAGES, and installing needs root: run" \
             "'sudo apt-get install -y $PACKAGES'; the tests that need them skip without them" >&2
        exit 0
    fi
fi
echo "installing $PACKAGES for the tests ..." >&2
$SUDO apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    $PACKAGES >/dev/null
# The package may start a system sshd on port 22; the tests never use it.
