"""Integration fixtures: a real sshd on loopback (127.0.0.2, 127.0.0.3, ...) for the suites
that reach nodes over SSH (cluster serving, doctor over SSH). See tests/support/sshd.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.sshd import Sshd, sshd_available, start_sshd


@pytest.fixture(scope="session")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """One sshd for the session, three loopback nodes; stopped by pid at the end."""
    if not sshd_available():
        pytest.skip("sshd is not installed (`make test` installs it via scripts/ensure-sshd.sh)")
    server = start_sshd(tmp_path_factory.mktemp("sshd"), nodes=3)
    yield server
    server.stop()
