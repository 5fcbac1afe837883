"""Listen addresses: whether one is reachable from this machine alone."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or `localhost`; anything else (0.0.0.0, a name, an interface's
    address) may be reached from other machines."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
