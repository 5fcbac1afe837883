"""`sm121 top`'s host panel for cluster nodes: the doctor's probe over a real sshd on
loopback, in the background, at its own rate (no engine needed)."""

from __future__ import annotations

import time

import pytest
from support.sshd import Sshd

from sm121.monitor.sampler import Sampler
from sm121.monitor.targets import NodeRef, Target

pytestmark = [pytest.mark.integration, pytest.mark.own_engines]


def test_remote_hosts_are_probed_over_ssh(sshd: Sshd) -> None:
    nodes = tuple(NodeRef(f"spark{i + 1}", ssh=host, ssh_config=str(sshd.ssh_config))
                  for i, host in enumerate(sshd.hosts[:2]))
    # An engine URL nobody answers: the row says so, and the hosts still come.
    sampler = Sampler([Target("cluster-run", ("http://127.0.0.1:9",), nodes)],
                      remote_period_s=60)
    try:
        sampler.prime()
        deadline = time.monotonic() + 120
        sample = sampler.sample()
        while any(h.get("pending") for h in sample["hosts"]):
            assert time.monotonic() < deadline, sample["hosts"]
            time.sleep(0.5)
            sample = sampler.sample()
    finally:
        sampler.close()
    assert [h["node"] for h in sample["hosts"]] == ["spark1", "spark2"]
    for host in sample["hosts"]:
        assert host["error"] is None and host["mem_available_gib"] > 0
        assert len(host["load"]) == 3 and host["age_s"] >= 0
    assert sample["targets"][0]["engine"] is None and sample["targets"][0]["errors"]
