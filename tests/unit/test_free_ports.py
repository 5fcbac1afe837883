"""free_ports: a port chosen outside the kernel's ephemeral range, bindable on every address."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

from sm121.free_ports import DEFAULT_EPHEMERAL, LOWEST, bindable, ephemeral_range, free_port


def test_the_range_is_the_kernels_or_linuxs_default(tmp_path: Path) -> None:
    given = tmp_path / "range"
    given.write_text("40000\t50000\n")
    assert ephemeral_range(given) == (40000, 50000)
    assert ephemeral_range(tmp_path / "absent") == DEFAULT_EPHEMERAL
    given.write_text("garbage")
    assert ephemeral_range(given) == DEFAULT_EPHEMERAL


def test_a_chosen_port_lies_outside_the_range_and_is_bindable(tmp_path: Path) -> None:
    given = tmp_path / "range"
    given.write_text("32768 60999\n")
    ports = {free_port(path=given) for _ in range(200)}
    assert all(LOWEST <= p < 32768 or 60999 < p <= 65535 for p in ports)
    assert len(ports) > 150  # random over ~24,000 ports, not one sequence
    assert all(bindable("127.0.0.1", p) for p in list(ports)[:20])


def test_a_taken_port_is_never_chosen(tmp_path: Path) -> None:
    given = tmp_path / "range"
    given.write_text(f"{LOWEST + 1} 65535\n")  # leaves exactly one port outside: LOWEST
    with socket.socket() as taken:
        with contextlib.suppress(OSError):  # somebody else holding it is just as taken
            taken.bind(("127.0.0.1", LOWEST))
        port = free_port(path=given)
    assert port != LOWEST and port >= LOWEST + 1  # the kernel's own choice, in the range


def test_every_address_is_checked(tmp_path: Path) -> None:
    port = free_port(("127.0.0.1", "127.0.0.2"))
    assert bindable("127.0.0.1", port) and bindable("127.0.0.2", port)
