#!/bin/sh
# The cluster tests start their own sshd on loopback (127.0.0.2, 127.0.0.3, ...). Install
# openssh-server when it is missing; do nothing when sshd is already there.
set -eu
if [ -x /usr/sbin/sshd ] || command -v sshd >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "sshd is missing and apt-get is not available: install openssh-server by hand;" \
         "the cluster tests skip without it" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
        echo "sshd is missing and installing it needs root: run" \
             "'sudo apt-get install -y openssh-server'; the cluster tests skip without it" >&2
        exit 0
    fi
fi
echo "installing openssh-server for the cluster tests ..." >&2
$SUDO apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    openssh-server >/dev/null
# The package may start a system sshd on port 22; the tests never use it.
