"""A port free now, for a server that binds it a moment later (an engine, a gateway, a test's
sshd), chosen outside the kernel's ephemeral range.

bind(0) hands out a port of the ephemeral range, the range every outgoing connection's local
port comes from too. Between the choice and the server's own bind (an engine's boot: seconds
to minutes) a client connection on this host can take it, and the server then fails "already
in use": a CI run's supervised serve lost its gateway port so, 26 s after choosing it, beside
tests that open thousands of loopback connections. Outside the range no connection takes it;
only another chooser can, and the pick is random over some 20,000 ports, each checked
bindable on every address it will serve."""

from __future__ import annotations

import random
import socket
from collections.abc import Sequence
from pathlib import Path

RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL = (32768, 60999)  # Linux's default, where the kernel does not say
LOWEST = 10000  # below it sit the well-known and registered ports services expect
TRIES = 200

# Not the module's `random`: hypothesis seeds that one per test, and two test processes would
# then choose the same ports in the same order.
_rng = random.SystemRandom()


def ephemeral_range(path: Path = RANGE_FILE) -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports (Linux's default elsewhere)."""
    try:
        low, high = (int(x) for x in path.read_text().split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return low, high


def bindable(host: str, port: int) -> bool:
    """Whether a server could bind the address now (TCP)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        try:
            probe.bind((host.strip("[]"), port))
        except OSError:
            return False
    return True


def free_port(hosts: Sequence[str] = ("127.0.0.1",), path: Path = RANGE_FILE) -> int:
    """A port bindable now on every one of the addresses, outside the ephemeral range where
    there is room; the kernel's own choice (bind 0) only where there is none."""
    low, high = ephemeral_range(path)
    spans = [(a, b) for a, b in ((LOWEST, low - 1), (high + 1, 65535)) if a <= b]
    size = sum(b - a + 1 for a, b in spans)
    for _ in range(TRIES if size else 0):
        k = _rng.randrange(size)
        for a, b in spans:
            if k <= b - a:
                port = a + k
                break
            k -= b - a + 1
        if all(bindable(host, port) for host in hosts):
            return port
    for _ in range(50):
        family = socket.AF_INET6 if ":" in hosts[0] else socket.AF_INET
        with socket.socket(family) as probe:
            probe.bind((hosts[0].strip("[]"), 0))
            port = int(probe.getsockname()[1])
        if all(bindable(host, port) for host in hosts[1:]):
            return port
    raise OSError(f"no port free on all of {', '.join(hosts)}")
