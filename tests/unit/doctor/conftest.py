"""Facts from the sample /proc and /sys trees, probed by the real probe."""

from __future__ import annotations

import pytest
from doctor_hosts import probe_tree

from sm121.hosts.facts import HostFacts


@pytest.fixture(scope="session")
def head() -> HostFacts:
    return probe_tree("gb10-head")


@pytest.fixture(scope="session")
def worker() -> HostFacts:
    return probe_tree("gb10-worker")
